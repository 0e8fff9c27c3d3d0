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
    # a scoped copy is another snapshot of the same read: the server's lock graph is the
    # read's (not built again), its holders (hand-built backends here) and view its own
    evaluate(dataclasses.replace(one, scope="shop"), CAT, Config())
    assert builds == Counter(lock_graph=2, horizon_holders=3)


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


# --- one shared read, many targets (the daemon: pg.sessions read once per server) ---------


def _shared(scope: str, sessions: object, horizon: object) -> Snapshot:
    return Snapshot(target=scope, engine="postgresql", server_version="15", version_num=150000,
                    taken_at=1_800_000_000.0, scope=scope,
                    sections={"pg.sessions": sessions, "pg.horizon": horizon})


def _read(rows: list[dict[str, Any]]) -> object:
    """A built pg.sessions section, as the daemon's single flight hands it to every target."""
    from dbwatch.snapshot import build_section

    return build_section("pg.sessions", rows)


def _primary() -> object:
    """A primary's pg.horizon without hand-built backends (those come from pg.sessions)."""
    from dbwatch.snapshot import build_section

    return build_section("pg.horizon", {k: v for k, v in HORIZON.items() if k != "backends"})


def test_a_shared_read_builds_its_models_once_and_each_target_sees_its_own(
    builds: Counter[str],
) -> None:
    """Database A has a lock chain and an old snapshot; B has neither. Both targets read
    the same shared rows: the server's graph and holders are built once, and whichever target
    asks first, B shows nothing of A."""
    hold = dict(backend(1, 50_000_000, 7200.0, db="a"), backend_type="client backend")
    rows = [
        {**pg(1, "idle in transaction", 7200, db="a"), **hold},
        pg(2, "active", 900, db="a", blocked_by=[1], wait_event_type="Lock"),
        pg(3, "idle", 5, db="b", xact_start=None),
    ]
    for order in (("b", "a"), ("a", "b")):
        read, hz = _read(rows), _primary()
        found = {}
        for db in order:
            ev = evaluate(_shared(db, read, hz), CAT, Config())
            found[db] = {(f.rule, f.subject) for f in ev.findings}
        assert ("PG101", "pid 1") in found["a"], found["a"]
        assert any(r == "PG201" for r, _ in found["a"]), found["a"]
        assert not {r for r, _ in found["b"]} & {"PG101", "PG201", "PG001", "PG002"}, found["b"]
    assert builds["lock_graph"] == 2  # once per read (two reads: one per order)
    assert builds["horizon_holders"] == 2
    one, two = _shared("a", read, hz), _shared("b", read, hz)
    assert models.horizon_holders(one) is models.horizon_holders(two)
    assert models.pg_scoped_lock_graph(two).edges == {}
    assert models.pg_scoped_lock_graph(one).edges == {2: (1,)}


def test_the_next_read_is_not_answered_from_the_last(builds: Counter[str]) -> None:
    """A new shared read (the next interval) gets its own models: the chain that ended and the
    holder that committed are gone, a new one is seen."""
    hz = _primary()
    first = _read([pg(1, "idle in transaction", 7200, db="a"),
                   pg(2, "active", 900, db="a", blocked_by=[1], wait_event_type="Lock")])
    ev = evaluate(_shared("a", first, hz), CAT, Config())
    assert "PG101" in {f.rule for f in ev.findings}
    second = _read([pg(1, "idle", 1, db="a", xact_start=None), pg(2, "idle", 1, db="a")])
    ev = evaluate(_shared("a", second, hz), CAT, Config())
    assert "PG101" not in {f.rule for f in ev.findings}
    third = _read([pg(7, "idle in transaction", 7200, db="b"),
                   pg(8, "active", 900, db="b", blocked_by=[7], wait_event_type="Lock")])
    ev = evaluate(_shared("b", third, hz), CAT, Config())
    assert ("PG101", "pid 7") in {(f.rule, f.subject) for f in ev.findings}
    assert builds["lock_graph"] == 3


def test_holders_are_shared_only_with_the_same_horizon_rows() -> None:
    """The holders of a read are kept with the horizon rows they were made from: a target
    whose pg.horizon is another read (or names its own standbys) gets its own."""
    from dbwatch.snapshot import build_section

    read = _read([pg(1, "idle", 1, db="a", xact_start=None)])
    hz = _primary()
    prepared = build_section("pg.horizon", {
        **{k: v for k, v in HORIZON.items() if k != "backends"},
        "prepared": [{"gid": "g1", "xid": "5", "database": "a", "xid_age": 9_000_000,
                      "prepared_seconds": 7200.0, "user": "app"}]})
    plain = models.horizon_holders(_shared("a", read, hz))
    assert plain == [] and models.horizon_holders(_shared("b", read, hz)) is plain
    other = models.horizon_holders(_shared("a", read, prepared))
    assert other is not None and [h.kind for h in other] == ["prepared"]
    assert models.horizon_holders(_shared("b", read, hz)) == []
