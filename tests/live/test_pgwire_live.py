"""The daemon's idle-cycle statement around psycopg's cursor (issue 28, pgwire):
`PgConnection.fixed_rows` prepares dbwatch's constant statement once per session and runs it
through the connection's libpq wrapper. Against the real PostgreSQL: the same values and
errors as the cursor path (rows()), a server error, a statement timeout, a killed session
(TargetError; the daemon replaces it), the deadline's socket shutdown, a statement gone from
the session, a changed catalog marker and rows appearing in dead tuples."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from conftest import PG_URL

from dbwatch.config import Config, DaemonConfig, TargetConfig
from dbwatch.errors import ProbeError, TargetError
from dbwatch.probes import ProbeCache, SharedProbes, run_probes
from dbwatch.probes.pg_mvcc import _joined, _joined_rows, dead_tuple_rows
from dbwatch.targets import open_target, spec_for
from dbwatch.targets.abort import abort

BASE = PG_URL.rsplit("/", 1)[0]


@pytest.fixture
def url(own_pg_db: str) -> str:
    return f"{BASE}/{own_pg_db}"


def _as_dicts(got: tuple[tuple[str, ...], list[tuple[object, ...]]]) -> list[dict[str, object]]:
    names, rows = got
    return [dict(zip(names, r, strict=True)) for r in rows]


def test_fixed_rows_values_as_the_cursor_gives_them(url: str) -> None:
    """Every type the probes read, NULLs, names with non-ASCII letters, several rows and
    none: the values and names of rows(), twice (the second from the prepared statement)."""
    text = (
        "SELECT g AS n, g::int8 * 10000000000 AS big, g / 3.0 AS num, g::float8 / 7 AS f,"
        " g % 2 = 0 AS even, 'é' || g AS \"ünï\", NULL::text AS nothing,"
        " now() - g * interval '1 hour' AS at, interval '90 seconds' AS span,"
        " ARRAY[g, g + 1] AS arr, current_database()::name AS db"
        " FROM generate_series(1, 3) g ORDER BY g"
    )
    conn = open_target(spec_for(url, "f"))
    try:
        for _ in range(2):
            want = conn.rows(text)
            got = _as_dicts(conn.fixed_rows(text))
            # now() is the statement's: compare it apart, the rest exactly (types too)
            assert [{k: v for k, v in r.items() if k != "at"} for r in got] == [
                {k: v for k, v in r.items() if k != "at"} for r in want
            ]
            assert [type(v) for r in got for v in r.values()] == [
                type(v) for r in want for v in r.values()
            ]
            assert [r["at"].tzinfo is not None for r in got] == [True] * 3
        assert conn.fixed_rows("SELECT 1 AS a WHERE false") == (("a",), [])
    finally:
        conn.close()


def test_fixed_rows_server_errors_as_rows(url: str) -> None:
    """A server error is the ProbeError rows() raises (message, privilege and grant); a
    statement timeout too, and the session goes on answering."""
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("CREATE TABLE secret (id int)")
        c.execute("DROP ROLE IF EXISTS dbw_pgwire_nobody")
        c.execute("CREATE ROLE dbw_pgwire_nobody LOGIN")
    conn = open_target(spec_for(url, "e"))
    nobody = open_target(spec_for(url.replace("postgres@", "dbw_pgwire_nobody@"), "n"))
    try:
        for c, text in ((conn, "SELECT 1 / 0 AS x"), (nobody, "SELECT id FROM secret")):
            with pytest.raises(ProbeError) as old:
                c.rows(text)
            with pytest.raises(ProbeError) as new:
                c.fixed_rows(text)
            assert (new.value.detail, new.value.privilege, new.value.grant) == (
                old.value.detail,
                old.value.privilege,
                old.value.grant,
            )
        assert new.value.privilege and new.value.grant  # the refused SELECT names its grant
        conn.conn.execute("SET statement_timeout = 50")
        with pytest.raises(ProbeError, match="statement timeout"):
            conn.fixed_rows("SELECT pg_sleep(2)")
        assert conn.fixed_rows("SELECT 2 AS b") == (("b",), [(2,)])
    finally:
        nobody.close()
        conn.close()
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("DROP TABLE secret")
            c.execute("DROP ROLE dbw_pgwire_nobody")


def _kill(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as adm:
        adm.execute("SELECT pg_terminate_backend(%s)", (pid,))
        for _ in range(100):  # the backend is gone once pg_stat_activity no longer lists it
            if not adm.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchall():
                return
            time.sleep(0.05)


def test_fixed_rows_killed_session_is_lost(url: str) -> None:
    """A session terminated between two runs: a TargetError (connection lost), as rows()."""
    conn = open_target(spec_for(url, "k"))
    try:
        assert conn.fixed_rows("SELECT 1 AS a") == (("a",), [(1,)])
        _kill(url, conn.backend_pid)
        with pytest.raises(TargetError, match="connection lost: terminating connection"):
            conn.fixed_rows("SELECT 1 AS a")
        assert conn.conn.closed
    finally:
        conn.close()


def test_fixed_rows_deadline_shuts_the_wait(url: str) -> None:
    """The daemon's deadline shuts the socket from another thread while the statement
    waits (the GIL is free meanwhile): the wait ends with a TargetError, not with the
    statement's answer."""
    conn = open_target(spec_for(url, "d"))
    try:
        conn.fixed_rows("SELECT 1 AS a")
        timer = threading.Timer(0.3, abort, (conn,))
        timer.start()
        with pytest.raises(TargetError, match="connection lost"):
            conn.fixed_rows("SELECT pg_sleep(3) AS slept")
        timer.join()
    finally:
        conn.close()


def test_fixed_rows_prepares_again_when_the_statement_is_gone(url: str) -> None:
    conn = open_target(spec_for(url, "g"))
    try:
        assert conn.fixed_rows("SELECT 3 AS c") == (("c",), [(3,)])
        conn.conn.execute("DEALLOCATE ALL")
        assert conn.fixed_rows("SELECT 3 AS c") == (("c",), [(3,)])
        names = [r["name"] for r in conn.rows("SELECT name FROM pg_prepared_statements")]
        assert len(names) == 1 and names[0].startswith("dbwatch_")
    finally:
        conn.close()


def test_joined_statement_through_fixed_rows(url: str) -> None:
    """The daemon's joined statement: an idle database's one row gives its marker; rows
    appearing in dead tuples are the rows of the cursor path; a DDL moves the marker."""
    conn = open_target(spec_for(url, "j"))
    try:
        text = _joined(conn.version)
        idle = _joined_rows(*conn.fixed_rows(text))
        assert len(idle) == 1 and set(idle[0]) == {"catalog_track_counts", "catalog_marker"}
        assert idle[0] == {k: conn.rows(text)[0][k] for k in idle[0]}
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("CREATE TABLE jobs (id int)")
            c.execute("INSERT INTO jobs SELECT generate_series(1, 30)")
            c.execute("DELETE FROM jobs WHERE id <= 20")
        deadline = time.time() + 10
        got = idle
        while time.time() < deadline:  # the counters reach shared memory within a second
            got = _joined_rows(*conn.fixed_rows(text))
            if got[0].get("table") == "jobs":
                break
            time.sleep(0.2)
        assert got == conn.rows(text)
        assert got[0]["n_dead_tup"] == 20 and got[0]["queue"] is True
        assert got[0]["catalog_marker"] != idle[0]["catalog_marker"]  # CREATE TABLE
    finally:
        conn.close()


def test_daemon_pass_same_sections_as_an_audit_pass(url: str) -> None:
    """run_probes in a daemon pass (the joined statement through fixed_rows) and an audit
    pass (dead_tuples.sql through the cursor) read the same pg.dead_tuples, idle and with a
    table holding dead tuples."""
    conn = open_target(spec_for(url, "p"))
    cache, store = ProbeCache(), SharedProbes(ttl=60.0)
    config = Config(targets=(TargetConfig(name="p", url=url),), daemon=DaemonConfig())
    try:

        def both() -> tuple[object, object]:
            daemon = run_probes(
                conn, "p", ["pg.dead_tuples"], None, config, cache, shared=(store, "k")
            )
            audit = run_probes(conn, "p", ["pg.dead_tuples"], None, config)
            return daemon.sections["pg.dead_tuples"], audit.sections["pg.dead_tuples"]

        d, a = both()
        assert d == a and getattr(d, "tables") == ()
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("CREATE TABLE plain_stuff (id int)")
            c.execute("INSERT INTO plain_stuff SELECT generate_series(1, 30)")
            c.execute("DELETE FROM plain_stuff WHERE id <= 5")
        deadline = time.time() + 10
        while time.time() < deadline and not dead_tuple_rows(conn):
            time.sleep(0.2)
        d, a = both()
        assert d == a and [t.table for t in getattr(d, "tables")] == ["plain_stuff"]
    finally:
        conn.close()


def test_daemon_replaces_a_killed_session(url: str) -> None:
    """A kept session killed between two cycles: the next cycle's statement (fixed_rows)
    finds it lost, the pool replaces it, and the cycle reads the target as before."""
    from dbwatch.catalogue import load_catalogue
    from dbwatch.evaluate import Selection
    from dbwatch.pipeline import probe_target
    from dbwatch.targets.pool import ConnectionPool

    spec = spec_for(url, "r")
    config = Config(targets=(TargetConfig(name="r", url=url),), daemon=DaemonConfig())
    pool, cache, store = ConnectionPool(), ProbeCache(), SharedProbes(ttl=60.0)
    cat = load_catalogue()
    sel = Selection()
    try:
        first = probe_target(spec, cat, config, sel, cache=cache, pool=pool, shared=store)
        assert first.snapshot.sections.get("pg.dead_tuples") is not None
        conn, _ = pool.checkout(spec)
        pid = getattr(conn, "backend_pid")
        assert getattr(conn, "_prepared")  # the joined statement went through fixed_rows
        pool.checkin(spec, conn)
        _kill(url, pid)
        again = probe_target(spec, cat, config, sel, cache=cache, pool=pool, shared=store)
        assert again.snapshot.sections.get("pg.dead_tuples") == first.snapshot.sections.get(
            "pg.dead_tuples"
        )
        assert not again.snapshot.failures
        assert pool.opened == 2
        conn, _ = pool.checkout(spec)
        assert getattr(conn, "backend_pid") != pid
        pool.checkin(spec, conn)
    finally:
        pool.discard()


def test_databases_kept_with_the_config(url: str, own_pg_db: str) -> None:
    """databases_for's answer is kept with the config object: a reloaded config naming
    another database is read at once; an all-databases target still lists them each pass
    (a database created since is in the next one)."""
    from dbwatch.probes.pg_mvcc import databases_for

    conn = open_target(spec_for(url, "dbs"))
    extra = f"{own_pg_db}_x"
    try:
        one = Config(targets=(TargetConfig(name="dbs", url=url),))
        assert databases_for(conn, one) == ((own_pg_db,), ())
        assert databases_for(conn, one) is databases_for(conn, one)
        two = Config(targets=(TargetConfig(name="dbs", url=url, databases=("other",)),))
        assert databases_for(conn, two) == ((own_pg_db, "other"), ())
        every = Config(targets=(TargetConfig(name="dbs", url=url, all_databases=True),))
        assert extra not in databases_for(conn, every)[0]
        with psycopg.connect(url, autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{extra}"')
        try:
            assert extra in databases_for(conn, every)[0]
        finally:
            with psycopg.connect(url, autocommit=True) as c:
                c.execute(f'DROP DATABASE "{extra}" WITH (FORCE)')
    finally:
        conn.close()


def test_queue_probe_nothing_found_as_the_walk(url: str) -> None:
    """The queue probe's shortcut for a database without queue tables gives what the walk
    gives; a rotation still carried from tables since dropped goes through the walk first
    (which drops it), then the shortcut."""
    from dbwatch.probes.queue import ROTATION, Rotation, collect

    conn = open_target(spec_for(url, "q"))
    cache = ProbeCache()
    try:
        carried = Rotation(1, (("public.jobs", {"table": "jobs", "error": None}),))
        cache.put(ROTATION, carried)
        walked = collect(conn, cache)
        assert cache.get(ROTATION, 60.0) == Rotation(0, ())  # the walk let it go
        short = collect(conn, cache)
        assert short == walked and short == collect(conn, None)
        assert walked == {
            "tables": [],
            "discovered": 0,
            "probed": 0,
            "max_tables": walked["max_tables"],
            "scope": None,
            "skipped": [],
            "retry_after": None,
            "libraries": walked["libraries"],
        }
        assert walked["libraries"] and short["libraries"] is not walked["libraries"]
    finally:
        conn.close()


def test_unavailable_statement_digests_one_object(url: str) -> None:
    """Without pg_stat_statements, every pass gives the same (frozen) section object: the
    rules reading it see it unchanged."""
    conn = open_target(spec_for(url, "u"))
    cache = ProbeCache()
    try:
        a = run_probes(conn, "u", ["pg.statement_digests"], cache=cache)
        b = run_probes(conn, "u", ["pg.statement_digests"], cache=cache)
        section = a.sections["pg.statement_digests"]
        assert type(section).__name__ == "Unavailable"
        assert b.sections["pg.statement_digests"] is section
    finally:
        conn.close()
