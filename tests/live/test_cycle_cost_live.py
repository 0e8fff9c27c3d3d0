"""What a daemon cycle sends (issue 28): catalog reads kept while the DDL marker stays, read
again after DDL; dbwatch's own other sessions left out of pg.sessions; the horizon's
server-wide part read once for a server's targets (see also test_pool_live)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import psycopg
import pymysql
import pytest
from conftest import MY_URL, PG_URL

from dbwatch.probes import ProbeCache, SharedProbes, run_probes
from dbwatch.snapshot import Snapshot
from dbwatch.snapshot.origin import PG_TXN_DETAIL
from dbwatch.snapshot.pg import PgSession
from dbwatch.snapshot.pg_mvcc import PG_DEAD_TUPLES
from dbwatch.snapshot.queues import MY_QUEUES, PG_QUEUES
from dbwatch.targets import Connection, open_target, spec_for

BASE = PG_URL.rsplit("/", 1)[0]
LARAVEL_JOBS = (
    "CREATE TABLE {name} (id bigserial PRIMARY KEY, queue varchar(255) NOT NULL, payload text "
    "NOT NULL, attempts smallint NOT NULL, reserved_at integer, available_at integer NOT NULL, "
    "created_at integer NOT NULL)"
)


class Counting:
    """The statements a connection is sent (their first comment line), in order."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.sent: list[str] = []
        self._rows = conn.rows

        def rows(sql: str, params: object = None, limit: int | None = None) -> object:
            self.sent.append(sql.strip().split("\n", 1)[0])
            return self._rows(sql, params, limit)  # type: ignore[arg-type]

        conn.rows = rows  # type: ignore[method-assign]
        fixed = getattr(conn, "fixed_rows", None)  # PostgreSQL: the daemon's idle statement
        if fixed is not None:

            def fixed_rows(sql: str) -> object:
                self.sent.append(sql.strip().split("\n", 1)[0])
                return fixed(sql)

            conn.fixed_rows = fixed_rows  # type: ignore[attr-defined]

    def take(self) -> list[str]:
        out, self.sent = self.sent, []
        return out


@pytest.fixture
def pg_db(own_pg_db: str) -> str:
    """A database made for this test (conftest: dropped after)."""
    return own_pg_db


def queues(snap: Snapshot) -> list[str]:
    """The queue tables the snapshot's queue probe examined."""
    data = snap.get(PG_QUEUES) if snap.engine == "postgresql" else snap.get(MY_QUEUES)
    return sorted(t.table for t in data.tables) if data is not None else []


def test_pg_catalog_reads_wait_for_ddl(pg_db: str) -> None:
    conn = open_target(spec_for(f"{BASE}/{pg_db}", "t"))
    counting = Counting(conn)
    cache = ProbeCache()
    needs = ["pg.queues", "pg.statement_digests"]
    try:
        run_probes(conn, "t", needs, cache=cache)
        first = counting.take()
        assert any("Queue-table candidates" in s for s in first)
        for _ in range(3):  # steady: the marker only, no catalog query
            snap = run_probes(conn, "t", needs, cache=cache)
            sent = counting.take()
            assert not any("Queue-table candidates" in s for s in sent), sent
            assert not any("pg_stat_statements installed" in s for s in sent), sent
            assert sum("catalog changed" in s for s in sent) == 1
        assert queues(snap) == []
        with psycopg.connect(f"{BASE}/{pg_db}", autocommit=True) as c:
            c.execute(LARAVEL_JOBS.format(name="jobs"))
        # the DDL reaches the statistics counters within about a second: poll, not sleep
        deadline = time.time() + 10
        while time.time() < deadline:
            snap = run_probes(conn, "t", needs, cache=cache)
            if queues(snap) == ["jobs"]:
                break
            time.sleep(0.2)
        assert queues(snap) == ["jobs"]
        # a column rename touches pg_attribute only: still seen
        with psycopg.connect(f"{BASE}/{pg_db}", autocommit=True) as c:
            c.execute("ALTER TABLE jobs RENAME COLUMN available_at TO due_at")
        deadline = time.time() + 10
        while time.time() < deadline:
            snap = run_probes(conn, "t", needs, cache=cache)
            if queues(snap) != ["jobs"]:
                break
            time.sleep(0.2)
        assert queues(snap) != ["jobs"], "the renamed column still looked like a Laravel table"
    finally:
        conn.close()


def _dead(snap: Snapshot) -> list[tuple[str, int]]:
    data = snap.get(PG_DEAD_TUPLES)
    assert data is not None
    return sorted((t.table, t.dead) for t in data.tables)


def test_pg_dead_tuples_carry_the_catalog_marker(pg_db: str) -> None:
    """A daemon pass reads the catalog marker in the dead-tuple statement: one statement per
    idle cycle. The dead tuples are still this cycle's (as an audit reads them, same column
    order), and a DDL is still noticed by the next pass whose marker moved."""
    conn = open_target(spec_for(f"{BASE}/{pg_db}", "t"))
    counting = Counting(conn)
    cache = ProbeCache()
    needs = ["pg.dead_tuples", "pg.queues", "pg.statement_digests"]
    try:
        run_probes(conn, "t", needs, cache=cache)
        counting.take()
        for _ in range(3):  # steady and idle: one statement, the marker inside it
            snap = run_probes(conn, "t", needs, cache=cache)
            sent = counting.take()
            assert len(sent) == 1 and "catalog marker in one round trip" in sent[0], sent
        assert _dead(snap) == []
        with psycopg.connect(f"{BASE}/{pg_db}", autocommit=True) as c:
            c.execute("CREATE TABLE things (id int)")
            c.execute("INSERT INTO things SELECT generate_series(1, 40)")
            c.execute("DELETE FROM things WHERE id <= 25")
        deadline = time.time() + 10  # closed: its counters reach shared memory at its exit
        while time.time() < deadline:
            snap = run_probes(conn, "t", needs, cache=cache)
            if _dead(snap) == [("things", 25)]:
                break
            time.sleep(0.2)
        assert _dead(snap) == [("things", 25)]
        audit = run_probes(conn, "t", ["pg.dead_tuples"])  # no cache: dead_tuples.sql alone
        assert _dead(audit) == _dead(snap)
        got, want = snap.get(PG_DEAD_TUPLES), audit.get(PG_DEAD_TUPLES)
        assert got is not None and want is not None
        # every column as the audit's statement reads it (the time since a vacuum moves on)
        assert [replace(t, vacuum_seconds_ago=None) for t in got.tables] == [
            replace(t, vacuum_seconds_ago=None) for t in want.tables
        ]
        counting.take()
        with psycopg.connect(f"{BASE}/{pg_db}", autocommit=True) as c:
            c.execute(LARAVEL_JOBS.format(name="jobs"))
        deadline = time.time() + 10
        while time.time() < deadline:
            snap = run_probes(conn, "t", needs, cache=cache)
            if queues(snap) == ["jobs"]:
                break
            time.sleep(0.2)
        assert queues(snap) == ["jobs"]  # the DDL moved the marker read along: catalog re-read
        assert any("Queue-table candidates" in s for s in counting.take())
    finally:
        conn.close()


def test_pg_sessions_leave_out_own_sessions(pg_db: str) -> None:
    spec = spec_for(f"{BASE}/{pg_db}", "t")
    reader = open_target(spec)
    others = [open_target(spec) for _ in range(3)]
    outsider = psycopg.connect(f"{BASE}/{pg_db}", autocommit=True, application_name="dbwatch")
    try:
        snap = run_probes(reader, "t", ["pg.sessions"])
        rows = snap.sections["pg.sessions"]
        assert isinstance(rows, tuple)
        pids = {r.pid for r in rows if isinstance(r, PgSession)}
        own = {o.backend_pid for o in others}
        assert not pids & own  # dbwatch's other sessions: by connection id
        assert reader.backend_pid in pids  # the reading session stays (is_self)
        # a session merely calling itself dbwatch is not hidden
        assert outsider.info.backend_pid in pids
    finally:
        outsider.close()
        for o in others:
            o.close()
        reader.close()


def test_horizon_shared_per_server(pg_db: str) -> None:
    store = SharedProbes(ttl=60.0)
    spec = spec_for(f"{BASE}/{pg_db}", "t")
    a, b = open_target(spec), open_target(spec)
    counts = Counting(a), Counting(b)
    try:
        run_probes(a, "a", ["pg.horizon"], shared=(store, "k"))
        run_probes(b, "b", ["pg.horizon"], shared=(store, "k"))
        sent = [s for c in counts for s in c.take()]
        # pg_stat_replication (and the instance, prepared, slots) once for the two targets
        assert sum("Standbys connected to this server" in s for s in sent) == 1
    finally:
        a.close()
        b.close()


def test_role_privileges_shared_per_server(pg_db: str) -> None:
    """The role's attributes are the server's: read once for its targets; the unreadable
    queue tables are each database's own and read by each."""
    store = SharedProbes(ttl=60.0)
    spec = spec_for(f"{BASE}/{pg_db}", "t")
    a, b = open_target(spec), open_target(spec)
    counts = Counting(a), Counting(b)
    try:
        snaps = [
            run_probes(c, n, ["pg.privileges"], shared=(store, "k")) for c, n in ((a, "a"), (b, "b"))
        ]
        sent = [s for c in counts for s in c.take()]
        assert sum("superuser, or membership" in s for s in sent) == 1
        assert sum("Queue tables of this database" in s for s in sent) == 2
        for snap in snaps:  # both targets know who they are
            priv = snap.sections["pg.privileges"]
            assert getattr(priv, "user", None) == "postgres"
            assert getattr(priv, "sees_all_sessions", None) is True
    finally:
        a.close()
        b.close()


def test_pg_txn_detail_only_when_sessions_show_a_transaction(pg_db: str) -> None:
    """The daemon sends txn_locks.sql only when this cycle's shared pg.sessions shows a client
    backend of the target's database in a transaction; then its detail is what an audit reads."""
    spec = spec_for(f"{BASE}/{pg_db}", "t")
    conn = open_target(spec)
    counting = Counting(conn)
    needs = ["pg.sessions", "pg.txn_detail"]
    job = psycopg.connect(f"{BASE}/{pg_db}")
    try:
        snap = run_probes(conn, "t", needs, cache=ProbeCache(), shared=(SharedProbes(0.0), "k"))
        assert not any("open transactions hold" in s for s in counting.take())
        idle = snap.get(PG_TXN_DETAIL)
        assert idle is not None and idle.locks == () and idle.statements == ()  # read: empty
        job.execute("CREATE TEMP TABLE held(x int)")  # a transaction, open and idle
        job.execute("SELECT 1")
        time.sleep(1.2)  # older than MIN_AGE
        snap = run_probes(conn, "t", needs, cache=ProbeCache(), shared=(SharedProbes(0.0), "k"))
        assert sum("open transactions hold" in s for s in counting.take()) == 1
        got = snap.get(PG_TXN_DETAIL)
        audit = run_probes(conn, "t", needs).get(PG_TXN_DETAIL)  # no sharing: its own sessions
        assert got is not None and audit is not None
        assert {lk.pid for lk in got.locks} == {job.info.backend_pid}
        assert got.locks == audit.locks
        assert [(s.pid, s.query) for s in got.statements] == [
            (s.pid, s.query) for s in audit.statements
        ]
    finally:
        job.close()
        conn.close()


@pytest.fixture
def my_db(uniq: str) -> Iterator[str]:
    name = f"dbw_cost_{uniq}"
    admin = pymysql.connect(host="127.0.0.1", user="root", autocommit=True)
    admin.cursor().execute(f"CREATE DATABASE `{name}`")
    try:
        yield name
    finally:
        admin.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
        admin.close()


def test_mysql_catalog_reads_wait_for_ddl(my_db: str) -> None:
    conn = open_target(spec_for(f"{MY_URL.rsplit('/', 1)[0]}/{my_db}", "m"))
    counting = Counting(conn)
    cache = ProbeCache()
    try:
        run_probes(conn, "m", ["my.queues"], cache=cache)
        assert any("Queue-table candidates" in s for s in counting.take())
        run_probes(conn, "m", ["my.queues"], cache=cache)
        assert not any("Queue-table candidates" in s for s in counting.take())
        c = pymysql.connect(host="127.0.0.1", user="root", database=my_db, autocommit=True)
        c.cursor().execute(
            "CREATE TABLE jobs (id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY, queue "
            "varchar(255) NOT NULL, payload longtext NOT NULL, attempts tinyint unsigned NOT "
            "NULL, reserved_at int unsigned NULL, available_at int unsigned NOT NULL, "
            "created_at int unsigned NOT NULL)"
        )
        c.close()
        snap = run_probes(conn, "m", ["my.queues"], cache=cache)
        assert queues(snap) == ["jobs"]
    finally:
        conn.close()


def test_dead_tuples_with_marker_is_parsed_once() -> None:
    """psycopg keeps the parse of a statement up to 4,096 bytes (psycopg._queries
    MAX_CACHED_STATEMENT_LENGTH); a longer one is parsed again at every execution."""
    from dbwatch.probes.pg_mvcc import _joined, _with_marker
    from dbwatch.probes.sqlfiles import sql
    from dbwatch.targets.version import ServerVersion

    for num in (100000, 120000, 150000, 170000):
        v = ServerVersion.from_pg_num(num)
        text = _with_marker(sql("postgresql", "dead_tuples", v), sql("postgresql", "catalog_marker", v))
        assert len(text.encode()) <= 4096, num
        # the daemon sends it with its constants written in: no parameter, nothing to parse
        assert "%(" not in _joined(v) and _joined(v) is _joined(v), num
