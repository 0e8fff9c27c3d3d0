"""Per-cycle models once (issue 25.2): one snapshot builds its lock graph and its horizon
holders once, whoever asks — every check, terminate's candidates, the figures (metrics, Nagios
perfdata). Hand-built snapshots, no database."""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import pytest

from dbwatch.actions.sessions import candidates
from dbwatch.catalogue import load_catalogue
from dbwatch.checks import models
from dbwatch.checks.lockgraph import LockGraph, pg_graph_of
from dbwatch.config import Config
from dbwatch.evaluate import evaluate
from dbwatch.figures import gauges
from dbwatch.snapshot import Snapshot
from dbwatch.snapshot.pg import PG_SESSIONS, scoped

CAT = load_catalogue()


def pg(pid: int, state: str, secs: float, db: str = "shop", **kw: Any) -> dict[str, Any]:
    return {"pid": pid, "user": "app", "application": "w", "database": db, "state": state,
            "xact_seconds": secs, "query_seconds": secs, "state_seconds": secs,
            "backend_type": "client backend", "backend_start": "2026-01-01T00:00:00+00:00",
            "xact_start": "2026-01-01T00:01:00+00:00", "query": "q", **kw}


def backend(pid: int, xid_age: int, secs: float, db: str = "shop") -> dict[str, Any]:
    return {"pid": pid, "database": db, "user": "app", "application": "w", "client_addr": None,
            "backend_start": "t0", "xact_start": "t1", "state": "idle in transaction",
            "backend_xid": None, "backend_xmin": "100", "xid_age": xid_age,
            "xact_seconds": secs, "query": "q"}


HORIZON = {"instance": {"in_recovery": False, "hot_standby_feedback": "off"},
           "backends": [backend(1, 50_000_000, 7200.0)], "prepared": [], "slots": [],
           "replication": [], "primary": None, "standbys": []}
DEAD = {"tables": [{"database": "shop", "schema": "public", "table": "jobs",
                    "n_dead_tup": 5_000_000, "n_live_tup": 1000, "vacuum_seconds_ago": None,
                    "autovacuum_count": 0, "queue": True}]}


def pg_snapshot(scope: str | None = None) -> Snapshot:
    sessions = [pg(1, "idle in transaction", 7200),
                pg(2, "active", 900, blocked_by=[1], wait_event_type="Lock"),
                pg(3, "active", 800, blocked_by=[2], wait_event_type="Lock"),
                pg(4, "active", 700, db="other", blocked_by=[1], wait_event_type="Lock"),
                pg(5, "active", 1, is_self=True)]
    return Snapshot(target="t", engine="postgresql", server_version="15", version_num=150000,
                    taken_at=1_800_000_000.0, scope=scope,
                    sections={"pg.sessions": sessions, "pg.horizon": HORIZON,
                              "pg.dead_tuples": DEAD})


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every lock-graph build (all go through LockGraph.from_pairs) and every horizon-holder
    build, counted."""
    count: Counter[str] = Counter()
    from_pairs = LockGraph.from_pairs.__func__  # type: ignore[attr-defined]

    def counting_pairs(cls: type, pairs: Any) -> Any:
        count["lock_graph"] += 1
        return from_pairs(cls, pairs)

    holders = models.holders

    def counting_holders(*args: Any) -> Any:
        count["horizon_holders"] += 1
        return holders(*args)

    monkeypatch.setattr(LockGraph, "from_pairs", classmethod(counting_pairs))
    monkeypatch.setattr(models, "holders", counting_holders)
    return count


def test_a_postgresql_cycle_builds_each_model_once(builds: Counter[str]) -> None:
    snap = pg_snapshot()
    ev = evaluate(snap, CAT, Config())
    rules = {f.rule for f in ev.findings}
    # the consumers really ran: the session, lock and horizon rules found something
    assert {"PG001", "PG002", "PG101", "PG201", "PG202"} <= rules, rules
    gauges(snap, ev.findings)  # the daemon's metrics and history; Nagios perfdata
    rows = snap.get(PG_SESSIONS) or ()
    live = candidates(rows, "t", graph=models.pg_lock_graph(snap))  # terminate in the daemon
    assert {s.pid: s.blocks for s in live if s.blocks} == {1: 3}  # 2, 3 and 4 wait behind 1
    assert builds == Counter(lock_graph=1, horizon_holders=1)


def test_each_snapshot_has_its_own_models(builds: Counter[str]) -> None:
    one, two = pg_snapshot(), pg_snapshot()
    for snap in (one, two, one):
        evaluate(snap, CAT, Config())
    assert builds == Counter(lock_graph=2, horizon_holders=2)
    # a scoped copy is another snapshot: its models are its own, not the unscoped one's
    evaluate(dataclasses.replace(one, scope="shop"), CAT, Config())
    assert builds == Counter(lock_graph=3, horizon_holders=3)


@pytest.mark.parametrize("scope", [None, "shop", "other"])
def test_the_scoped_view_is_the_graph_of_the_scoped_rows(scope: str | None) -> None:
    snap = pg_snapshot(scope)
    rows = snap.get(PG_SESSIONS) or ()
    assert models.pg_scoped_lock_graph(snap).edges == pg_graph_of(scoped(rows, scope)).edges
    assert models.pg_lock_graph(snap).edges == pg_graph_of(rows).edges
    assert models.pg_lock_graph(snap) is models.pg_lock_graph(snap)


def test_a_mysql_cycle_builds_its_lock_graph_once(builds: Counter[str]) -> None:
    def trx(thread: int, secs: float, command: str = "Query", state: str = "RUNNING") -> dict[str, Any]:
        return {"thread_id": thread, "trx_id": str(thread * 100), "trx_seconds": secs,
                "trx_state": state, "user": "app", "host": "h:1", "command": command,
                "command_seconds": secs, "trx_rows_locked": 1, "trx_rows_modified": 0}

    waits = {"source": "lock_waits_innodb", "waits": [
        {"waiting_thread_id": 42, "waiting_trx_id": "4200", "blocking_thread_id": 40,
         "blocking_trx_id": "4000", "blocking_user": "cron", "blocking_host": "h:9",
         "blocking_command": "Sleep", "blocking_trx_seconds": 900, "wait_seconds": 600},
        {"waiting_thread_id": 41, "waiting_trx_id": "4100", "blocking_thread_id": 40,
         "blocking_trx_id": "4000", "blocking_user": "cron", "blocking_host": "h:9",
         "blocking_command": "Sleep", "blocking_trx_seconds": 900, "wait_seconds": 600}]}
    rows = [trx(40, 900, "Sleep"), trx(41, 700, state="LOCK WAIT"),
            trx(42, 600, state="LOCK WAIT")]
    snap = Snapshot(target="m", engine="mariadb", server_version="10.11", version_num=101100,
                    taken_at=1_800_000_000.0, sections={"my.trx": rows, "my.lock_waits": waits})
    ev = evaluate(snap, CAT, Config())
    assert {"MY001", "MY101"} <= {f.rule for f in ev.findings}
    assert builds == Counter(lock_graph=1)
