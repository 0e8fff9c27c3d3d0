"""An idle target's cycle does less Python work (issue 28, item 2) and finds the same: a
section built again only when its data changed, the settings rules run again only when their
section did, one state transaction a cycle — the findings, their lifecycle, the cycle
record and the metrics as without them, and a change seen by the very next cycle."""

from __future__ import annotations

import dataclasses
import sqlite3
import time
from pathlib import Path

import psycopg
import pytest
from conftest import PG_URL

from dbwatch import evaluate as evaluate_mod
from dbwatch.catalogue import load_catalogue
from dbwatch.config import Config, DaemonConfig, TargetConfig, TerminateConfig
from dbwatch.daemon.loop import Daemon, Setup
from dbwatch.daemon.state import State
from dbwatch.evaluate import Selection, evaluate
from dbwatch.pipeline import TargetResult, probe_target
from dbwatch.probes import ProbeCache
from dbwatch.probes.run import _build
from dbwatch.snapshot import Snapshot
from dbwatch.snapshot.queues import PG_QUEUES
from dbwatch.snapshot.settings import PG_SETTINGS
from dbwatch.targets import spec_for

BASE = PG_URL.rsplit("/", 1)[0]
LARAVEL_JOBS = (
    "CREATE TABLE jobs (id bigserial PRIMARY KEY, queue varchar(255) NOT NULL, payload text "
    "NOT NULL, attempts smallint NOT NULL, reserved_at integer, available_at integer NOT NULL, "
    "created_at integer NOT NULL)"
)


@pytest.fixture
def pg_db(own_pg_db: str) -> str:
    """A database made for this test (conftest: dropped after)."""
    return own_pg_db


def _daemon(url: str, state: State, terminate: bool = False) -> Daemon:
    tc = TargetConfig(name="t", url=url, interval=15.0)
    config = Config(
        targets=(tc,),
        daemon=DaemonConfig(max_connections_per_server=4),
        terminate=TerminateConfig(enabled=terminate, dry_run=True),
    )
    return Daemon(None, state, Setup(load_catalogue(), config, {"t": (spec_for(url, "t"), tc)}, ()))


def _cycle(d: Daemon) -> TargetResult:
    got = d.cycle("t", time.time())
    assert got is not None and not got.error
    return got


def _found(result: TargetResult) -> list[tuple[str, str, str, str]]:
    return sorted((f.rule, f.subject, f.severity, f.summary) for f in result.evaluation.findings)


def test_idle_cycles_find_what_an_audit_finds(pg_db: str, tmp_path: Path) -> None:
    """Ten idle cycles reuse sections and the settings rules' findings; each cycle's findings
    are what a one-shot audit (no cache, no reuse) of the same database finds."""
    url = f"{BASE}/{pg_db}"
    state = State(tmp_path / "state.db")
    d = _daemon(url, state)
    try:
        results = [_cycle(d) for _ in range(10)]
        cfg = d.setup.config
        audit = probe_target(spec_for(url, "t"), d.setup.catalogue, cfg, Selection())
        want = _found(audit)
        assert any(r == "PG501" for r, *_ in want) or want == []  # what the server has set
        for r in results[1:]:
            assert _found(r) == want
            assert sorted(r.evaluation.ran) == sorted(audit.evaluation.ran)
            assert r.evaluation.unknown == audit.evaluation.unknown
        # the sections of an idle cycle are last cycle's objects (not built again) and equal
        # to what the audit built from its own read
        a, b = results[-2].snapshot, results[-1].snapshot
        for name in ("pg.dead_tuples", "pg.queues"):
            assert b.sections[name] is a.sections[name]
            assert b.sections[name] == audit.snapshot.sections[name]
        # the lifecycle as without reuse: one row per finding, firing, seen by the last cycle
        rows = state.firing("t")
        assert sorted((r.rule, r.subject) for r in rows) == [(r, s) for r, s, *_ in want]
        assert all(r.last_seen >= results[-1].snapshot.taken_at for r in rows)
        assert state.cycles()[0]["status"] == "ok"
        assert state.cycles()[0]["findings"] == len(want)
    finally:
        if d.pool is not None:
            d.pool.discard()
        state.close()


def test_a_change_after_idle_cycles_is_seen_by_the_next_cycle(pg_db: str, tmp_path: Path) -> None:
    url = f"{BASE}/{pg_db}"
    state = State(tmp_path / "state.db")
    d = _daemon(url, state)
    try:
        for _ in range(6):
            idle = _cycle(d)
        before = idle.snapshot.get(PG_QUEUES)
        assert before is not None and not before.tables
        with psycopg.connect(url, autocommit=True) as c:
            c.execute(LARAVEL_JOBS)
            c.execute(
                "INSERT INTO jobs(queue, payload, attempts, available_at, created_at) "
                "VALUES ('default', '{}', 0, 0, 0)"
            )
        deadline = time.time() + 5.0
        while True:  # the catalog marker reaches shared memory up to a second after the DDL
            after = _cycle(d).snapshot.get(PG_QUEUES)
            if (after is not None and after.tables) or time.time() > deadline:
                break
            time.sleep(0.3)
        assert after is not None and after is not before
        assert [t.table for t in after.tables] == ["jobs"]
    finally:
        if d.pool is not None:
            d.pool.discard()
        state.close()


def test_one_state_transaction_per_idle_cycle_same_records(pg_db: str, tmp_path: Path) -> None:
    """Without the terminate action a cycle's findings and bookkeeping commit together: one
    BEGIN per cycle (two before) with group commit off; with it on (a tick longer than the
    test), none — the idle cycles' writes wait for the group. The rows `status` and the
    dashboard read are the same in every case, and as with terminate on (the two commits)."""
    url = f"{BASE}/{pg_db}"
    rows: dict[tuple[bool, float], tuple[object, ...]] = {}
    for terminate in (False, True):
        for tick in (0.0, 3600.0):
            state = State(tmp_path / f"state-{terminate}-{tick}.db")
            state.group_tick = tick
            d = _daemon(url, state, terminate=terminate)
            sent: list[str] = []
            try:
                for _ in range(3):
                    _cycle(d)
                state.flush()
                db = state._db
                assert isinstance(db, sqlite3.Connection)
                db.set_trace_callback(sent.append)
                for _ in range(5):
                    _cycle(d)
                db.set_trace_callback(None)
                begins = sum(1 for s in sent if s.startswith("BEGIN"))
                assert begins == ((10 if terminate else 5) if tick == 0 else 0), sent
                state.flush()
                cyc = state.cycles()[0]
                series = state.query(
                    "SELECT key, count(*) AS n FROM series GROUP BY key ORDER BY key"
                )
                rows[(terminate, tick)] = (
                    sorted((r.rule, r.subject, r.status) for r in state.firing("t")),
                    (cyc["status"], cyc["findings"], cyc["error"]),
                    [(r["key"], r["n"]) for r in series],
                )
            finally:
                if d.pool is not None:
                    d.pool.discard()
                state.close()
    assert all(r == rows[(False, 0.0)] for r in rows.values()), rows


def test_section_reused_only_for_the_same_data_and_types() -> None:
    cache = ProbeCache()
    row = {"database": "d", "schema": "public", "table": "t", "n_live_tup": 1, "n_dead_tup": 5}
    first = _build("pg.dead_tuples", {"databases": ["d"], "tables": [row]}, cache)
    again = _build("pg.dead_tuples", {"databases": ["d"], "tables": [dict(row)]}, cache)
    assert again is first
    changed = _build(
        "pg.dead_tuples", {"databases": ["d"], "tables": [dict(row, n_dead_tup=6)]}, cache
    )
    assert changed is not first and changed != first
    # equal by == but not the same types (6.0 == 6): built again, never taken for the other
    floats = _build(
        "pg.dead_tuples", {"databases": ["d"], "tables": [dict(row, n_dead_tup=6.0)]}, cache
    )
    assert floats is not changed
    assert _build("pg.dead_tuples", None, cache) is None


def _settings_snapshot(value: str) -> Snapshot:
    rows = [
        {"name": n, "setting": value, "scope": "server", "role": None, "database": None}
        for n in ("statement_timeout", "idle_in_transaction_session_timeout", "lock_timeout")
    ]
    return Snapshot("t", "postgresql", "16", 160000, time.time(), {"pg.settings": rows})


def test_settings_rules_run_again_when_their_section_changes() -> None:
    cat, cfg = load_catalogue(), Config()
    sel = Selection(select=("PG501",))
    off = _settings_snapshot("0")
    first = evaluate(off, cat, cfg, sel)
    assert [f.rule for f in first.findings] == ["PG501"] * 2  # lock_timeout is not required
    # the same section object (the ttl cache's): the last run's findings, not a new run
    same = dataclasses.replace(off, taken_at=off.taken_at + 15)
    assert same.get(PG_SETTINGS) is off.get(PG_SETTINGS)
    second = evaluate(same, cat, cfg, sel)
    assert [id(f) for f in second.findings] == [id(f) for f in first.findings]
    # a new read with the same values: run again, the same findings
    third = evaluate(_settings_snapshot("0"), cat, cfg, sel)
    assert [f.fingerprint for f in third.findings] == [f.fingerprint for f in first.findings]
    assert [id(f) for f in third.findings] != [id(f) for f in first.findings]
    # the settings fixed: the very next evaluation finds nothing
    assert evaluate(_settings_snapshot("30s"), cat, cfg, sel).findings == []
    # and without the reuse the results are the same
    evaluate_mod._LAST.clear()
    assert evaluate(same, cat, cfg, sel).findings == first.findings
