"""An idle cycle's probe and rule work done once, never hiding a change (issue 28, probecost):
pg.horizon one object per shared read, PG201 not run again while no holder pins the
target's database (and run at once when one does), the probes' rows as dicts with the
column names kept per result shape, the dead-tuple statement with its constants written
in. Real PostgreSQL; see also test_cycle_cost_live and test_hotpath_live."""

from __future__ import annotations

import time

import psycopg
import pytest
from conftest import PG_URL
from psycopg.rows import dict_row

from dbwatch.catalogue import Thresholds, load_catalogue
from dbwatch.config import Config, RuleOverride, TargetConfig
from dbwatch.evaluate import Selection, evaluate
from dbwatch.probes import ProbeCache, SharedProbes, run_probes
from dbwatch.probes.pg_mvcc import _DEAD_PARAMS, _inlined, _joined, _with_marker
from dbwatch.probes.sqlfiles import sql
from dbwatch.snapshot import Snapshot
from dbwatch.targets import open_target, spec_for

BASE = PG_URL.rsplit("/", 1)[0]
CAT = load_catalogue()


@pytest.fixture
def pg_db(own_pg_db: str) -> str:
    return own_pg_db


def test_horizon_one_object_per_shared_read(pg_db: str) -> None:
    """The same shared read gives the same pg.horizon object (PG201's memo compares it by
    identity); a new read a new one; a target with a peer of its own builds it every pass."""
    url = f"{BASE}/{pg_db}"
    conn = open_target(spec_for(url, "h"))
    store, cache = SharedProbes(ttl=60.0), ProbeCache()
    try:
        first = run_probes(conn, "h", ["pg.horizon"], cache=cache, shared=(store, "k"))
        second = run_probes(conn, "h", ["pg.horizon"], cache=cache, shared=(store, "k"))
        assert first.sections["pg.horizon"] is not None
        assert second.sections["pg.horizon"] is first.sections["pg.horizon"]
        fresh = SharedProbes(ttl=60.0)  # the next share interval: a new read
        third = run_probes(conn, "h", ["pg.horizon"], cache=cache, shared=(fresh, "k"))
        assert third.sections["pg.horizon"] is not first.sections["pg.horizon"]
        assert third.sections["pg.horizon"] == first.sections["pg.horizon"]
        # the database is part of it: another database's target gets its own
        assert getattr(third.sections["pg.horizon"], "instance").database == pg_db
        # a standby peer configured: read each pass (the peer's answer is the target's own)
        config = Config(
            targets=(
                TargetConfig(name="h", url=url),
                TargetConfig(name="s", url=url, primary="h"),
            )
        )
        a = run_probes(conn, "h", ["pg.horizon"], config=config, cache=cache, shared=(fresh, "k"))
        b = run_probes(conn, "h", ["pg.horizon"], config=config, cache=cache, shared=(fresh, "k"))
        assert a.sections["pg.horizon"] is not b.sections["pg.horizon"]
        assert len(getattr(a.sections["pg.horizon"], "standbys")) == 1
    finally:
        conn.close()


def _pg201(snap: Snapshot, config: Config) -> list[str]:
    found = evaluate(snap, CAT, config, Selection(select=("PG201",)))
    assert found.ran == ["PG201"]
    return [f.subject for f in found.findings if f.rule == "PG201"]


def test_pg201_runs_again_when_a_holder_pins_the_database(pg_db: str) -> None:
    """While no holder pins the target's database, a new shared sessions read does not run
    PG201 again; a snapshot held in that database is found in the very next pass, and its
    end too."""
    url = f"{BASE}/{pg_db}"
    conn = open_target(spec_for(url, "p201"))
    cache = ProbeCache()
    # any holder older than a second is a finding (the shipped threshold is 10 minutes)
    config = Config(
        rules={"PG201": RuleOverride(thresholds=Thresholds("duration", 0.0, 3600.0))}
    )
    needs = ["pg.horizon", "pg.sessions", "pg.dead_tuples"]

    def cycle() -> list[str]:
        # each pass a new shared read, as every share interval in a fleet
        snap = run_probes(conn, "p201", needs, cache=cache, shared=(SharedProbes(60.0), "k"))
        return _pg201(snap, config)

    holder = psycopg.connect(url, autocommit=False)
    try:
        assert cycle() == [] and cycle() == []
        with holder.cursor() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur.execute("SELECT count(*) FROM pg_class")  # takes the snapshot: backend_xmin
        time.sleep(1.2)
        found = cycle()
        pid = holder.info.backend_pid
        assert any(str(pid) in s for s in found), found
        holder.rollback()
        assert cycle() == []
    finally:
        holder.close()
        conn.close()


def test_rows_name_columns_per_result_shape(pg_db: str) -> None:
    """The probes' kept cursor returns dicts keyed as psycopg's dict_row keys them: two
    shapes with the same number of columns, names in another order, one after the other."""
    conn = open_target(spec_for(f"{BASE}/{pg_db}", "r"))
    try:
        assert conn.rows("SELECT 1 AS a, 2 AS b") == [{"a": 1, "b": 2}]
        assert conn.rows("SELECT 3 AS b, 4 AS a") == [{"b": 3, "a": 4}]
        assert conn.rows("SELECT 5 AS x, 6 AS y, 7 AS z WHERE false") == []
        got = conn.rows("SELECT g AS n, 'é' AS \"ünï\" FROM generate_series(1, 3) g", limit=2)
        assert got == [{"n": 1, "ünï": "é"}, {"n": 2, "ünï": "é"}]
        with psycopg.connect(f"{BASE}/{pg_db}", row_factory=dict_row) as plain:
            want = plain.execute("SELECT 1 AS a, now() AS a, NULL::int AS \"?column?\"").fetchall()
        assert conn.rows("SELECT 1 AS a, now() AS a, NULL::int AS \"?column?\"")[0].keys() == (
            want[0].keys()
        )
    finally:
        conn.close()


def test_dead_tuple_statement_constants_written_in(pg_db: str) -> None:
    """The daemon's joined statement carries its constants as literals and answers as the
    statement with bound parameters does (rows and columns, queue names and pattern)."""
    url = f"{BASE}/{pg_db}"
    with psycopg.connect(url, autocommit=True) as c:
        for t in ("jobs", "foo_queue", "plain_stuff"):
            c.execute(f"CREATE TABLE {t} (id int)")
            c.execute(f"INSERT INTO {t} SELECT generate_series(1, 30)")
            c.execute(f"DELETE FROM {t} WHERE id <= 20")
    conn = open_target(spec_for(url, "d"))
    try:
        text = _joined(conn.version)
        assert "%(" not in text and "$dbw$" in text
        bound = _with_marker(
            sql("postgresql", "dead_tuples", conn.version),
            sql("postgresql", "catalog_marker", conn.version),
        )
        deadline = time.time() + 10
        while time.time() < deadline:  # the counters reach shared memory within a second
            got = conn.rows(text)
            if len(got) == 3:
                break
            time.sleep(0.2)
        want = conn.rows(bound, _DEAD_PARAMS)
        assert got == want
        assert {(r["table"], r["queue"]) for r in got} == {
            ("jobs", True),
            ("foo_queue", True),
            ("plain_stuff", False),
        }
    finally:
        conn.close()


def test_inlined_takes_constants_only() -> None:
    assert _inlined("a = %(x)s AND b = %(y)s", {"x": 3, "y": "it's"}) == (
        "a = 3 AND b = $dbw$it's$dbw$"
    )
    with pytest.raises(TypeError):
        _inlined("a = %(x)s", {"x": 1.5})
    with pytest.raises(TypeError):
        _inlined("a = %(x)s", {"x": True})
    with pytest.raises(ValueError):
        _inlined("a = %(x)s", {"x": "$dbw$; DROP TABLE t"})
    with pytest.raises(ValueError):
        _inlined("a = %(x)s AND %(z)s", {"x": 1})


def test_pool_checkin_wakes_a_waiting_checkout(pg_db: str) -> None:
    """The pool notifies only when a checkout waits: one that waits for the server's only
    session is woken by the checkin (long before its 60 s wait would end), never left to
    time out."""
    import threading

    from dbwatch.targets.pool import ConnectionPool

    a = spec_for(f"{BASE}/{pg_db}", "a")
    b = spec_for(f"{BASE}/{pg_db}?application_name=x", "b")  # another URL: not a's session
    pool = ConnectionPool(per_server=1, wait=60.0)
    conn, _ = pool.checkout(a)
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(pool.checkout(b)), daemon=True)
    try:
        waiter.start()
        deadline = time.time() + 10
        while not pool._waiting and time.time() < deadline:
            time.sleep(0.01)
        assert pool._waiting == 1  # b waits: the cap is reached and nothing is idle
        pool.checkin(a, conn)  # idle now: b takes its place (evicts it) once woken
        waiter.join(20)
        assert not waiter.is_alive() and len(got) == 1
        assert pool._waiting == 0
    finally:
        for c in got:
            pool.checkin(b, c[0])  # type: ignore[index]
        pool.discard()
