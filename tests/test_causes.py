"""Causes (issue 12.6) over hand-built Snapshots: one lock graph, a blocked transaction names its
blocker, PG001 advice by state, real names in fixes. No database."""
from __future__ import annotations

from typing import Any

from dbwatch.catalogue import load_catalogue
from dbwatch.checks import CheckContext, load_checks
from dbwatch.checks.lockgraph import LockGraph
from dbwatch.findings import Finding
from dbwatch.snapshot import Snapshot

CAT = load_catalogue()


def run(rule: str, engine: str, version: int, **sections: Any) -> list[Finding]:
    s = Snapshot(target="t", engine=engine, server_version="x", version_num=version,
                 taken_at=0.0, sections=sections)
    r = CAT[rule]
    ctx = CheckContext(rule=r, snapshot=s, thresholds=r.thresholds, params=dict(r.params))
    return list(load_checks()[r.check].fn(ctx))


def test_lock_graph_chains_roots_cycles() -> None:
    g = LockGraph.from_pairs([(3, 2), (2, 1), (5, 4), (5, 1), (7, 8), (8, 7), (9, 9)])
    assert g.chain(3) == [3, 2, 1] and g.root_of(3) == 1
    assert g.roots_of(5) == [4, 1]
    assert g.roots() == {1: 3, 4: 1}
    assert g.root_of(7) is None and g.waiting(g.chain(7)[-1]) and not g.waiting(9)
    assert LockGraph.from_blocked_by({3: [2], 2: [1], 5: [4, 1]}).roots() == {1: 3, 4: 1}


def test_checks_do_not_import_actions() -> None:
    import pathlib
    import re
    root = pathlib.Path(__file__).resolve().parent.parent / "dbwatch" / "checks"
    for path in root.glob("*.py"):
        assert not re.search(r"^from \.\.actions|^import dbwatch\.actions|^from dbwatch\.actions",
                             path.read_text(), re.M), path


def pg(pid: int, state: str, xact: float, query: float, **kw: Any) -> dict[str, Any]:
    return {"pid": pid, "user": kw.pop("user", "billing app"), "application": "w",
            "database": kw.pop("database", "shop"), "state": state, "xact_seconds": xact,
            "query_seconds": query, "state_seconds": query, "backend_type": "client backend",
            "backend_start": "2026-01-01T00:00:00+00:00", "xact_start": "2026-01-01T00:01:00+00:00",
            "query": "q", **kw}


def test_pg001_active_long_query_gets_statement_timeout_with_the_real_role() -> None:
    f, = run("PG001", "postgresql", 150000, **{"pg.sessions": [pg(10, "active", 900, 899)]})
    assert "statement_timeout" in f.fix and "idle_in_transaction" not in f.fix
    assert "pg_cancel_backend(10)" in f.fix
    assert 'ALTER ROLE "billing app" IN DATABASE "shop" SET statement_timeout' in f.fix
    assert "transaction_timeout" not in f.fix          # PostgreSQL 15 has none
    f17, = run("PG001", "postgresql", 170002, **{"pg.sessions": [pg(10, "active", 900, 899)]})
    assert "transaction_timeout" in f17.fix


def test_pg001_many_statements_and_idle_in_transaction() -> None:
    f, = run("PG001", "postgresql", 150000, **{"pg.sessions": [pg(11, "active", 900, 2)]})
    assert "statement_timeout does not limit" in f.fix
    f, = run("PG001", "postgresql", 170000, **{"pg.sessions": [pg(11, "active", 900, 2)]})
    assert "SET transaction_timeout" in f.fix
    f, = run("PG001", "postgresql", 150000,
             **{"pg.sessions": [pg(12, "idle in transaction", 900, 800, user='we"ird')]})
    assert 'ALTER ROLE "we""ird" IN DATABASE "shop" SET idle_in_transaction_session_timeout' \
        in f.fix and "pg_terminate_backend(12)" in f.fix and "<app>" not in f.fix


def test_pg001_blocked_session_names_the_root_not_itself() -> None:
    sessions = [pg(1, "idle in transaction", 1000, 990, user="etl"),
                pg(2, "active", 900, 899, blocked_by=[1], wait_event_type="Lock"),
                pg(3, "active", 800, 799, blocked_by=[2], wait_event_type="Lock")]
    found = {f.subject: f for f in run("PG001", "postgresql", 150000,
                                       **{"pg.sessions": sessions})}
    f = found["pid 3"]
    assert "held by pid 1 (through pid 2)" in f.fix and "pg_terminate_backend(1)" in f.fix
    assert "pg_cancel_backend(3)" not in f.fix and "pg_terminate_backend(3)" not in f.fix
    assert f.evidence["root_pid"] == 1 and f.evidence["chain"] == [3, 2, 1]
    assert 'ALTER ROLE "etl"' in f.fix and "waiting for a lock held by pid 1" in f.summary


def trx(thread: int, secs: float, command: str = "Query", state: str = "RUNNING") -> dict[str, Any]:
    return {"thread_id": thread, "trx_id": str(thread * 100), "trx_seconds": secs,
            "trx_state": state, "user": "app", "host": "10.0.0.5:4431", "command": command,
            "command_seconds": secs, "trx_rows_locked": 1, "trx_rows_modified": 0}


WAITS = {"source": "lock_waits_innodb", "waits": [
    {"waiting_thread_id": 42, "waiting_trx_id": "4200", "blocking_thread_id": 41,
     "blocking_trx_id": "4100", "blocking_user": "batch", "blocking_host": "10.0.0.9:5",
     "blocking_command": "Query", "blocking_trx_seconds": 700, "wait_seconds": 30},
    {"waiting_thread_id": 41, "waiting_trx_id": "4100", "blocking_thread_id": 40,
     "blocking_trx_id": "4000", "blocking_user": "cron", "blocking_host": "10.0.0.7:9",
     "blocking_command": "Sleep", "blocking_trx_seconds": 900, "wait_seconds": 50},
]}


def test_my001_blocked_transaction_names_the_blocker_and_kills_the_root() -> None:
    rows = [trx(40, 900, "Sleep"), trx(41, 700, state="LOCK WAIT"), trx(42, 600, state="LOCK WAIT")]
    found = {f.subject: f for f in run("MY001", "mariadb", 101100,
                                       **{"my.trx": rows, "my.lock_waits": WAITS})}
    f = found["thread 42"]
    assert "KILL 40;" in f.fix and "KILL 42" not in f.fix
    assert "cron@10.0.0.7:9 idle (Sleep)" in f.fix and "through thread 41" in f.fix
    assert "blocked by thread 40" in f.summary
    assert f.evidence["root_thread_id"] == 40 and f.evidence["chain"] == [42, 41, 40]
    root = found["thread 40"]
    assert "KILL 40;" in root.fix and "idle_transaction_timeout" in root.fix


def test_my001_without_lock_waits_never_suggests_killing_a_waiter() -> None:
    f, = run("MY001", "mysql", 80036, **{"my.trx": [trx(42, 600, state="LOCK WAIT")]})
    assert "KILL 42" not in f.fix and "sys.innodb_lock_waits" in f.fix
    assert "could not be read" in f.summary


def test_my001_optional_lock_waits_is_probed_but_never_required() -> None:
    chk = load_checks()[CAT["MY001"].check]
    assert "my.lock_waits" in chk.probes_for("mariadb")
    assert chk.sections_for("mariadb") == ("my.trx",)


PRIMARY = {"in_recovery": False, "hot_standby_feedback": "off"}


def hz(backends: list[dict[str, Any]]) -> dict[str, Any]:
    return {"instance": PRIMARY, "backends": backends, "prepared": [], "slots": [],
            "replication": [], "primary": None, "standbys": []}


def holder(pid: int, xid_age: int, secs: float, user: str, db: str = "shop") -> dict[str, Any]:
    return {"pid": pid, "database": db, "user": user, "application": "w", "client_addr": None,
            "backend_start": "b", "xact_start": "x", "state": "idle in transaction",
            "backend_xid": None, "backend_xmin": "100", "xid_age": xid_age, "xact_seconds": secs,
            "query": "select 1"}


def dead(**kw: Any) -> dict[str, Any]:
    return {"tables": [{"database": "shop", "schema": "Sales", "table": "jobs", "n_dead_tup": 5000,
                        "n_live_tup": 10, "vacuum_seconds_ago": None, "autovacuum_count": 0,
                        "queue": True, **kw}]}


def test_pg202_names_autovacuum_off_on_the_table() -> None:
    f, = run("PG202", "postgresql", 150000, **{"pg.horizon": hz([]),
             "pg.dead_tuples": dead(server_autovacuum="on", table_autovacuum_enabled="false")})
    assert "autovacuum_enabled = false" in f.summary and "not caught up" not in f.summary
    assert 'ALTER TABLE "Sales"."jobs" SET (autovacuum_enabled = on);' in f.fix
    assert "VACUUM (VERBOSE) \"Sales\".\"jobs\"" in f.fix and "scale_factor" not in f.fix
    assert f.evidence["autovacuum"] == "off (table)"


def test_pg202_names_autovacuum_off_on_the_server() -> None:
    f, = run("PG202", "postgresql", 150000, **{"pg.horizon": hz([]),
             "pg.dead_tuples": dead(server_autovacuum="off")})
    assert "autovacuum = off" in f.summary
    assert "ALTER SYSTEM SET autovacuum = on" in f.fix and "scale_factor" not in f.fix
    f, = run("PG202", "postgresql", 150000, **{"pg.horizon": hz([]),
             "pg.dead_tuples": dead(server_autovacuum="off", table_autovacuum_enabled="off")})
    assert "autovacuum = off" in f.summary and "autovacuum_enabled = false" in f.summary
    assert "ALTER SYSTEM" in f.fix and "SET (autovacuum_enabled = on)" in f.fix


def test_pg202_without_autovacuum_off_keeps_the_tuning_advice() -> None:
    f, = run("PG202", "postgresql", 150000, **{"pg.horizon": hz([]),
             "pg.dead_tuples": dead(server_autovacuum="on")})
    assert "not caught up" in f.summary and "scale_factor" in f.fix


def test_pg201_pg202_rank_every_holder_oldest_first() -> None:
    sections = {"pg.horizon": hz([holder(7, 9000, 900.0, "etl"), holder(8, 4000, 300.0, "web"),
                                  holder(9, 10, 0.5, "young")]),
                "pg.dead_tuples": dead(server_autovacuum="on")}
    f, = run("PG202", "postgresql", 150000, **sections)
    ranked = f.evidence["holders_ranked"]
    assert [h["pid"] for h in ranked] == [7, 8]          # the 0.5 s one pins nothing old
    assert "pg_terminate_backend(7)" in f.fix and "pg_terminate_backend(8)" in f.fix
    assert f.fix.index("(7)") < f.fix.index("(8)") and "1 more holder" in f.summary
    assert 'ALTER ROLE "etl" IN DATABASE "shop"' in f.fix
    found = {x.subject: x for x in run("PG201", "postgresql", 150000, **sections)}
    first = found["pid 7"]
    assert [h["pid"] for h in first.evidence["holders_ranked"]] == [7, 8, 9]
    assert "holder 1 of 3" in first.summary
    assert "next holder, pid 8" in first.fix and "pg_terminate_backend(8)" in first.fix


def test_pg201_holders_of_other_databases_are_not_ranked_together() -> None:
    sections = {"pg.horizon": hz([holder(7, 9000, 900.0, "etl"),
                                  holder(8, 4000, 900.0, "web", db="other")])}
    found = {x.subject: x for x in run("PG201", "postgresql", 150000, **sections)}
    assert [h["pid"] for h in found["pid 7"].evidence["holders_ranked"]] == [7]
    assert "next holder" not in found["pid 7"].fix


def test_daemon_terminate_never_acts_on_a_waiter() -> None:
    def usable(f: Any) -> bool:  # the SessionIdentity terminate and the daemon act on
        return f.session is not None and f.session.usable
    rows = [trx(40, 900, "Sleep"), trx(42, 600, state="LOCK WAIT")]
    found = {f.subject: f for f in run("MY001", "mariadb", 101100,
                                       **{"my.trx": rows, "my.lock_waits": WAITS})}
    assert not usable(found["thread 42"])
    assert usable(found["thread 40"])
    sessions = [pg(1, "idle in transaction", 1000, 990, user="etl"),
                pg(2, "active", 900, 899, blocked_by=[1], wait_event_type="Lock")]
    pgf = {f.subject: f for f in run("PG001", "postgresql", 150000, **{"pg.sessions": sessions})}
    assert not usable(pgf["pid 2"]) and usable(pgf["pid 1"])
