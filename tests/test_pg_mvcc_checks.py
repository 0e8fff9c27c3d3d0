"""PG101/PG102/PG201/PG202 checks over hand-built Snapshots (no database)."""
from __future__ import annotations

from typing import Any

from dbwatch.catalogue import load_catalogue
from dbwatch.checks import CheckContext, load_checks, pg_horizon
from dbwatch.checks.models import history_values
from dbwatch.checks.pg_horizon import Holder
from dbwatch.findings import Finding
from dbwatch.probes.pg_mvcc import receiver_app_name as probe_app_name
from dbwatch.snapshot import Snapshot
from dbwatch.snapshot.pg import PgInstance, PgReplication, build_horizon

CAT = load_catalogue()
NOW = 1_800_000_000.0
PRIMARY = {"in_recovery": False, "hot_standby_feedback": "off"}


def snap(**sections: Any) -> Snapshot:
    return Snapshot(target="db1", engine="postgresql", server_version="15.2",
                    version_num=150002, taken_at=NOW, sections=sections)


def run(rule: str, s: Snapshot, state: Any = None, **params: Any) -> list[Finding]:
    r = CAT[rule]
    ctx = CheckContext(rule=r, snapshot=s, thresholds=r.thresholds,
                       params={**r.params, **params}, state=state)
    return list(load_checks()[r.check].fn(ctx))


def holders(hz: dict[str, Any], target: str) -> list[Holder]:
    return pg_horizon.holders(build_horizon(hz), target)


def match_replication(rows: list[dict[str, Any]], inst: dict[str, Any],
                      xmin: str | None) -> dict[str, Any] | None:
    rep = pg_horizon.match_replication([PgReplication.from_row(r) for r in rows],
                                       PgInstance.from_row(inst), xmin)
    return None if rep is None else rep.to_json()


def backend(pid: int, xid_age: int, secs: float, db: str = "app", **kw: Any) -> dict[str, Any]:
    return {"pid": pid, "database": db, "user": "u", "application": kw.pop("app", "web"),
            "client_addr": None, "backend_start": "t0", "xact_start": "t1",
            "state": kw.pop("state", "idle in transaction"), "backend_xid": kw.pop("xid", None),
            "backend_xmin": kw.pop("xmin", "100"), "xid_age": xid_age, "xact_seconds": secs,
            "query": "select 1", **kw}


def horizon(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"instance": PRIMARY, "backends": [], "prepared": [], "slots": [],
                            "replication": [], "primary": None, "standbys": []}
    return {**base, **kw}


def table(name: str, dead: int, live: int = 0, db: str = "app", **kw: Any) -> dict[str, Any]:
    return {"database": db, "schema": "public", "table": name, "n_dead_tup": dead,
            "n_live_tup": live, "vacuum_seconds_ago": kw.pop("vac", None),
            "autovacuum_count": kw.pop("avc", 0), "queue": kw.pop("queue", True), **kw}


def test_holders_ranked_by_xid_age_across_kinds() -> None:
    hz = horizon(
        backends=[backend(10, 500, 700.0), backend(11, 50, 5.0, xid="99", xmin=None)],
        prepared=[{"gid": "tx'1", "xid": "77", "prepared": "p", "user": "u", "database": "app",
                   "xid_age": 900, "prepared_seconds": 3600.0}],
        slots=[{"slot_name": "cdc", "slot_type": "logical", "plugin": "pgoutput", "database": "app",
                "active": False, "xmin": None, "catalog_xmin": "5", "xmin_age": None,
                "catalog_xmin_age": 3000, "inactive_seconds": None}])
    hs = holders(hz, "db1")
    assert [h.kind for h in hs] == ["slot", "prepared", "backend", "backend"]
    assert hs[0].catalog_only and hs[0].scope == "catalogs (all databases)"
    assert "ROLLBACK PREPARED 'tx''1'" in hs[1].fix
    assert hs[3].extra["pins_by"] == "a write (backend_xid)"


def test_pg201_grades_duration_or_xid_whichever_is_worse() -> None:
    hz = horizon(backends=[backend(10, 10, 700.0), backend(11, 30_000_000, 1.0)],
                 slots=[{"slot_name": "s", "slot_type": "physical", "active": False,
                         "xmin": "3", "xmin_age": 2_000_000, "catalog_xmin": None}])
    found = {f.subject: f for f in run("PG201", snap(**{"pg.horizon": hz}))}
    assert found["pid 10"].severity == "warning"             # 11m40s >= 10m
    assert found["pid 11"].severity == "critical"            # 30M XIDs
    assert found["slot s"].severity == "warning"             # no wall clock: XID age only
    assert found["slot s"].evidence["age"].endswith("(no wall-clock age)")
    assert "pg_drop_replication_slot('s')" in found["slot s"].fix
    assert found["pid 11"].evidence["rank"] == 1


def test_pg202_names_holder_probable_then_confirmed_by_vacuum() -> None:
    hz = horizon(backends=[backend(42, 3000, 300.0, app="analytics")])
    probable = run("PG202", snap(**{"pg.horizon": hz,
                                     "pg.dead_tuples": {"tables": [table("que_jobs", 800)]}}))
    assert probable[0].evidence["holder_pid"] == 42 and probable[0].confidence == "probable"
    assert "pid 42" in probable[0].summary and probable[0].severity == "warning"
    held = run("PG202", snap(**{"pg.horizon": hz, "pg.dead_tuples": {
        "tables": [table("que_jobs", 20_000, vac=60.0)]}}))
    assert held[0].confidence == "high" and held[0].severity == "critical"
    assert "vacuumed 1m00s ago" in held[0].evidence["cause"]


def test_pg202_scope_other_database_and_young_holder_not_blamed() -> None:
    hz = horizon(backends=[backend(1, 3000, 300.0, db="other"), backend(2, 10, 0.5)])
    found = run("PG202", snap(**{"pg.horizon": hz,
                                 "pg.dead_tuples": {"tables": [table("jobs", 5000)]}}))
    assert found[0].evidence["holder"] is None
    assert "autovacuum" in found[0].fix and "autovacuum has not caught up" in found[0].summary


def test_pg202_thresholds_ratio_and_non_queue_tables() -> None:
    tables = [table("orders", 5000, queue=False), table("jobs", 600, live=10_000),
              table("events", 20_000, live=1000, queue=False)]
    found = run("PG202", snap(**{"pg.horizon": horizon(), "pg.dead_tuples": {"tables": tables}}))
    assert [f.evidence["table"] for f in found] == ["app.public.events"]


class History:
    def __init__(self, points: dict[str, list[tuple[float, float]]]) -> None:
        self.points = points

    def history(self, target: str, key: str, since_seconds: float) -> list[tuple[float, float]]:
        return self.points.get(key, [])


def test_pg202_growth_and_autovacuum_rising_from_state() -> None:
    hz = horizon(backends=[backend(7, 3000, 1.0)])     # too young to be "probable"
    t = table("que_jobs", 9000, avc=5)
    st = History({"pg.n_dead_tup:app.public.que_jobs": [(NOW - 600, 3000.0)],
                  "pg.autovacuum_count:app.public.que_jobs": [(NOW - 600, 2.0)]})
    f = run("PG202", snap(**{"pg.horizon": hz, "pg.dead_tuples": {"tables": [t]}}), state=st)[0]
    assert f.evidence["growth_per_min"] == 600.0 and "+600/min" in f.summary
    assert f.confidence == "high" and f.evidence["holder_pid"] == 7
    assert run("PG202", snap(**{"pg.horizon": hz, "pg.dead_tuples": {"tables": [t]}}),
               state=object())[0].evidence["growth_per_min"] is None


def test_pg201_harm_escalates_young_holder() -> None:
    hz = horizon(backends=[backend(5, 900, 30.0)])
    s = snap(**{"pg.horizon": hz, "pg.dead_tuples": {"tables": [table("river_job", 700)]}})
    found = run("PG201", s)
    assert found[0].severity == "warning" and "keeps 700 dead tuples" in found[0].summary
    assert not run("PG201", snap(**{"pg.horizon": hz}))


def test_pg201_harm_critical_only_when_configured() -> None:
    """harm_critical_dead_tuples: off by default (0); set, the holder that keeps that many dead
    tuples in one table is critical, one short of it stays a warning."""
    hz = horizon(backends=[backend(5, 900, 30.0)])
    s = snap(**{"pg.horizon": hz, "pg.dead_tuples": {"tables": [
        table("river_job", 700), table("orders", 12_000, queue=False)]}})
    assert [f.severity for f in run("PG201", s)] == ["warning"]
    assert [f.severity for f in run("PG201", s, harm_critical_dead_tuples="12k")] == ["critical"]
    assert [f.severity for f in run("PG201", s, harm_critical_dead_tuples=12_001)] == ["warning"]
    # the worst kept table counts, queue or not; a lower limit than harm's is still only
    # reached by tables the holder is blamed for
    only_queue = snap(**{"pg.horizon": hz, "pg.dead_tuples": {"tables": [table("river_job", 700)]}})
    assert [f.severity for f in run("PG201", only_queue, harm_critical_dead_tuples="700")] == [
        "critical"]
    assert [f.severity for f in run("PG201", only_queue, harm_critical_dead_tuples="701")] == [
        "warning"]
    # a holder that keeps nothing is not raised by the setting
    assert not run("PG201", snap(**{"pg.horizon": hz}), harm_critical_dead_tuples="1")


def test_standby_feedback_slot_and_linked_standby_query() -> None:
    rep = {"pid": 300, "application": "replica1", "client_addr": "10.0.0.5",
           "backend_start": "b", "backend_xmin": None, "xid_age": None, "slot_name": "r1"}
    slot = {"slot_name": "r1", "slot_type": "physical", "active": True, "active_pid": 300,
            "xmin": "90", "xmin_age": 5000, "catalog_xmin": None}
    sb = {"target": "replica-1", "error": None,
          "instance": {"receiver_slot": "r1", "application_name": "replica1"},
          "backends": [backend(77, 5000, 900.0, app="analytics", state="active", xmin="90")]}
    hs = holders(horizon(replication=[rep], slots=[slot], standbys=[sb]), "db1")
    assert len(hs) == 1 and hs[0].kind == "standby_feedback" and hs[0].extra["slot"] == "r1"
    f = run("PG201", snap(**{"pg.horizon": horizon(replication=[rep], slots=[slot],
                                                   standbys=[sb])}))[0]
    assert f.summary.startswith("the analytics query pid 77 on replica-1 holds the primary's")
    assert "on replica-1: SELECT pg_cancel_backend(77)" in f.fix and f.severity == "warning"


def test_standby_target_without_feedback_holds_nothing() -> None:
    inst = {"in_recovery": True, "hot_standby_feedback": "off"}
    assert holders(horizon(instance=inst, backends=[backend(1, 10, 9999.0)]), "r") == []
    inst = {"in_recovery": True, "hot_standby_feedback": "on", "application_name": "walreceiver"}
    prim = {"target": "db1", "error": None, "replication": [
        {"pid": 9, "application": "walreceiver", "client_addr": "10.0.0.7", "slot_name": None,
         "backend_xmin": "100"}]}
    hs = holders(horizon(instance=inst, backends=[backend(1, 10, 9999.0)], primary=prim), "r")
    assert hs[0].kind == "standby_query" and hs[0].extra["primary_replication"]["pid"] == 9


def test_match_replication_by_slot_name_addr_xmin() -> None:
    rows = [{"pid": 1, "application": "walreceiver", "client_addr": "10.0.0.1",
             "slot_name": None, "backend_xmin": "5"},
            {"pid": 2, "application": "walreceiver", "client_addr": "10.0.0.2",
             "slot_name": "s2", "backend_xmin": "6"}]
    assert match_replication(rows, {"receiver_slot": "s2"}, None)["pid"] == 2
    wr = {"application_name": "walreceiver"}
    assert match_replication(rows, {**wr, "server_addr": "10.0.0.1"}, None)["pid"] == 1
    assert match_replication(rows, wr, "6")["pid"] == 2
    assert match_replication(rows, wr, None) is None


def test_receiver_app_name_from_conninfo() -> None:
    assert probe_app_name("host=x fallback_application_name=walreceiver", "") == "walreceiver"
    assert probe_app_name("application_name='replica 1' host=x", "c") == "replica 1"
    assert probe_app_name(None, "main") == "main"


def _sess(pid: int, blocked_by: list[int] | None, secs: float, state: str = "active") -> dict:
    return {"pid": pid, "blocked_by": blocked_by, "query_seconds": secs, "state": state,
            "user": "u", "application": "w", "backend_start": "b", "xact_start": "x",
            "xact_seconds": 400.0, "query": "update jobs"}


def test_pg101_chain_to_root() -> None:
    sessions = [_sess(1, None, 400.0, "idle in transaction"), _sess(2, [1], 40.0),
                _sess(3, [2], 90.0), _sess(4, [3, 1], 10.0), _sess(5, [6], 50.0),
                _sess(6, [5], 60.0)]
    found = run("PG101", snap(**{"pg.sessions": sessions}))
    root = next(f for f in found if f.evidence["root_pid"] == 1)
    assert root.evidence["pid"] == 3 and root.evidence["blocked_count"] == 3
    assert [c["pid"] for c in root.evidence["chain"]] == [3, 2, 1]
    assert "pg_terminate_backend(1)" in root.fix and root.severity == "warning"
    assert "3 sessions wait behind it" in root.summary
    assert len(found) == 2       # the 5<->6 cycle ends in one of them, without looping


def test_pg102_one_shot_counter_and_daemon_increase() -> None:
    rows = [{"database": "app", "deadlocks": 4, "stats_reset": None},
            {"database": "quiet", "deadlocks": 0, "stats_reset": None}]
    s = snap(**{"pg.deadlocks": rows})
    one = run("PG102", s)
    assert len(one) == 1 and one[0].evidence["count"] == 4 and "never reset" in one[0].summary
    assert run("PG102", s, state=History({})) == []
    inc = run("PG102", s, state=History({"pg.deadlocks:app": [(NOW - 60, 1.0)]}))
    assert inc[0].evidence["count"] == 3 and "since the last look" in inc[0].summary
    reset = run("PG102", s, state=History({"pg.deadlocks:app": [(NOW - 60, 9.0)]}))
    assert reset[0].evidence["count"] == 4


def test_history_values_for_the_daemon() -> None:
    s = snap(**{"pg.dead_tuples": {"tables": [table("jobs", 10, avc=3)]},
                "pg.deadlocks": [{"database": "app", "deadlocks": 2}],
                "pg.horizon": horizon(backends=[backend(1, 77, 1.0)])})
    assert history_values(s) == {"pg.n_dead_tup:app.public.jobs": 10.0,
                                 "pg.autovacuum_count:app.public.jobs": 3.0,
                                 "pg.deadlocks:app": 2.0, "pg.horizon_xid_age": 77.0}
