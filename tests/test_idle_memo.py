"""An idle cycle's rules (issue 28): a pure check's findings are its last run's on the target
while what it reads is the same; anything it reads that changes, a reload, a rule that reads
the clock or the daemon's history runs again. Hand-built snapshots, the real State on
SQLite (no server)."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from dbwatch import evaluate as evaluate_mod
from dbwatch.catalogue import load_catalogue
from dbwatch.checks import CHECKS, Check, load_checks
from dbwatch.config import Config, RuleOverride
from dbwatch.daemon.state import State
from dbwatch.evaluate import Selection, evaluate
from dbwatch.findings import Finding
from dbwatch.snapshot import Snapshot

CAT = load_catalogue()
NOW = 1_800_000_000.0


def session(pid: int, secs: float, db: str = "shop", **kw: Any) -> dict[str, Any]:
    return {"pid": pid, "user": "app", "application": "w", "database": db,
            "state": "idle in transaction", "xact_seconds": secs, "query_seconds": secs,
            "state_seconds": secs, "backend_type": "client backend",
            "backend_start": "2026-01-01T00:00:00+00:00",
            "xact_start": "2026-01-01T00:01:00+00:00", "query": "q", **kw}


def snap(target: str, sections: dict[str, Any], scope: str | None = "shop",
         taken_at: float = NOW) -> Snapshot:
    return Snapshot(target=target, engine="postgresql", server_version="15", version_num=150000,
                    taken_at=taken_at, scope=scope, sections=sections)


def again(s: Snapshot, **changes: Any) -> Snapshot:
    """The next cycle's snapshot: a new object, the same section objects unless replaced."""
    sections = {**s.sections, **changes.pop("sections", {})}
    return dataclasses.replace(s, sections=sections, built=True, **changes)


def rules_of(found: list[Finding], rule: str) -> list[str]:
    return sorted(f.subject for f in found if f.rule == rule)


def test_session_rules_follow_the_databases_sessions() -> None:
    """PG001/PG002 depend on the target's database's sessions alone: another database's
    sessions changing reuses the findings; a session of its own appearing, changing or going
    away runs the rules again."""
    sel = Selection(select=("PG001", "PG002", "PG101"))
    idle = snap("memo-sessions", {"pg.sessions": [session(9, 7200, db="other")]})
    first = evaluate(idle, CAT, Config(), sel)
    assert first.findings == [] and first.ran == ["PG001", "PG002", "PG101"]
    # another database's session changed (a new shared read): nothing of this target's
    other = again(idle, sections={"pg.sessions": Snapshot(
        "x", "postgresql", "15", 150000, NOW, {"pg.sessions": [session(9, 9000, db="other")]},
    ).sections["pg.sessions"]})
    assert evaluate(other, CAT, Config(), sel).findings == []
    # a transaction of its own database opens: found at once
    busy = snap("memo-sessions", {"pg.sessions": [session(9, 7200, db="other"),
                                                  session(5, 7200)]})
    found = evaluate(busy, CAT, Config(), sel).findings
    assert rules_of(found, "PG001") == ["pid 5"] and rules_of(found, "PG002") == ["pid 5"]
    # it ages: the new read's findings, not the last ones
    older = snap("memo-sessions", {"pg.sessions": [session(5, 9000)]})
    aged = evaluate(older, CAT, Config(), sel).findings
    assert {f.evidence["age_seconds"] for f in aged if f.rule == "PG001"} == {9000.0}
    # and it ends: gone in the very next evaluation
    assert evaluate(again(idle), CAT, Config(), sel).findings == []


def test_scope_and_target_are_part_of_what_is_reused() -> None:
    """The same section read for another scope or another target is not that one's result."""
    sel = Selection(select=("PG001",))
    rows = snap("memo-scope", {"pg.sessions": [session(5, 7200)]})
    assert rules_of(evaluate(rows, CAT, Config(), sel).findings, "PG001") == ["pid 5"]
    elsewhere = again(rows, scope="other")
    assert evaluate(elsewhere, CAT, Config(), sel).findings == []
    twin = again(rows, target="memo-scope-2")
    assert [f.target for f in evaluate(twin, CAT, Config(), sel).findings] == ["memo-scope-2"]
    # PG201 reads the same sections for any scope: a holder in another database pins the
    # horizon of an unscoped target, not of one scoped to "shop"
    hz = {"instance": {"in_recovery": False, "hot_standby_feedback": "off"}, "prepared": [],
          "slots": [], "replication": [], "primary": None, "standbys": []}
    holder = session(9, 7200, db="other", backend_xmin="100", xid_age=50_000_000)
    pg201 = Selection(select=("PG201",))
    unscoped = snap("memo-scope-201", {"pg.horizon": hz, "pg.sessions": [holder]}, scope=None)
    assert rules_of(evaluate(unscoped, CAT, Config(), pg201).findings, "PG201") == ["pid 9"]
    scoped = again(unscoped, scope="shop")
    assert evaluate(scoped, CAT, Config(), pg201).findings == []


def test_a_reload_runs_the_rules_again_on_the_same_sections() -> None:
    """A config reload (a new Config: other params, thresholds, ignores) is seen on the same
    section objects; so is a new catalogue."""
    sel = Selection(select=("PG001", "PG501"))
    settings = [{"name": n, "setting": "0", "scope": "server", "role": None, "database": None}
                for n in ("statement_timeout", "idle_in_transaction_session_timeout")]
    s = snap("memo-reload", {"pg.sessions": [session(5, 7200)], "pg.settings": settings})
    found = evaluate(s, CAT, Config(), sel).findings
    assert rules_of(found, "PG001") == ["pid 5"] and len(rules_of(found, "PG501")) == 2
    reloaded = Config(rules={
        "PG001": RuleOverride(params={"ignore_users": ["app"]}),
        "PG501": RuleOverride(params={"required": ["statement_timeout"]}),
    })
    found = evaluate(again(s), CAT, reloaded, sel).findings
    assert rules_of(found, "PG001") == []
    assert rules_of(found, "PG501") == ["setting statement_timeout"]
    # back to the first config object: its own results again
    assert rules_of(evaluate(again(s), CAT, Config(), sel).findings, "PG001") == ["pid 5"]
    # a new catalogue whose PG001 has other thresholds (its rules are new objects)
    cat2 = {**CAT, "PG001": dataclasses.replace(CAT["PG001"], thresholds=dataclasses.replace(
        CAT["PG001"].thresholds, warning=10_000.0, critical=20_000.0))}
    assert rules_of(evaluate(again(s), cat2, Config(), sel).findings, "PG001") == []


def test_pg102_reads_the_history_every_time(tmp_path: Path) -> None:
    """PG102 depends on the daemon's last point of the counter: the same pg.deadlocks section
    with the history moved gives another answer (it is not a pure check)."""
    st = State(tmp_path / "s.db")
    try:
        sel = Selection(select=("PG102",))
        dl = [{"database": "shop", "deadlocks": 7, "stats_reset": None}]
        s = snap("memo-pg102", {"pg.deadlocks": dl})
        st.record_metric("memo-pg102", "pg.deadlocks:shop", 7.0, NOW - 10)
        assert evaluate(s, CAT, Config(), sel, state=st).findings == []
        st.record_metric("memo-pg102", "pg.deadlocks:shop", 4.0, NOW - 5)  # a newer point
        found = evaluate(again(s), CAT, Config(), sel, state=st).findings
        assert [f.evidence["count"] for f in found] == [3]
    finally:
        st.close()


def test_pg202_reads_the_clock_and_history_every_time(tmp_path: Path) -> None:
    """PG202's growth per minute is from the snapshot's time and the history: the same
    sections at a later time or with more history give other evidence."""
    st = State(tmp_path / "s.db")
    try:
        sel = Selection(select=("PG202",))
        hz = {"instance": {"in_recovery": False, "hot_standby_feedback": "off"},
              "backends": [], "prepared": [], "slots": [], "replication": [],
              "primary": None, "standbys": []}
        dead = {"tables": [{"database": "shop", "schema": "public", "table": "jobs",
                            "n_dead_tup": 50_000, "n_live_tup": 10, "vacuum_seconds_ago": None,
                            "autovacuum_count": 0, "queue": True}]}
        import time

        now = time.time()
        s = snap("memo-pg202", {"pg.horizon": hz, "pg.dead_tuples": dead}, taken_at=now)
        assert [f.evidence["growth_per_min"] for f in
                evaluate(s, CAT, Config(), sel, state=st).findings] == [None]
        st.record_metric("memo-pg202", "pg.n_dead_tup:shop.public.jobs", 20_000.0, now - 60)
        later = again(s, taken_at=now)
        assert [f.evidence["growth_per_min"] for f in
                evaluate(later, CAT, Config(), sel, state=st).findings] == [30_000.0]
        # the same sections and history a minute later: the rate is over two minutes now
        assert [f.evidence["growth_per_min"] for f in evaluate(
            again(s, taken_at=now + 60), CAT, Config(), sel, state=st).findings] == [15_000.0]
    finally:
        st.close()


def test_a_check_replaced_in_the_registry_is_the_one_run() -> None:
    """The steps are worked out once per rule set, but the registry's live check is run: a
    check swapped in later (and its reuse) is its own."""
    sel = Selection(select=("PG501",))
    settings = [{"name": "statement_timeout", "setting": "0", "scope": "server", "role": None,
                 "database": None}]
    s = snap("memo-swap", {"pg.settings": settings})
    assert len(evaluate(s, CAT, Config(), sel).findings) == 1
    load_checks()
    old = CHECKS["pg_settings"]
    CHECKS.replace("pg_settings", Check(old.name, lambda ctx: iter(()), old.needs, old.optional,
                                        old.inputs))
    try:
        assert evaluate(again(s), CAT, Config(), sel).findings == []
    finally:
        CHECKS.replace("pg_settings", old)
    assert len(evaluate(again(s), CAT, Config(), sel).findings) == 1


def test_every_pure_check_gives_what_a_fresh_run_gives() -> None:
    """Reused or run, the findings are the same: each pure check of the catalogue on the same
    snapshot twice (the second from the memo) and once with the memo emptied."""
    settings = [{"name": n, "setting": "0", "scope": "server", "role": None, "database": None}
                for n in ("statement_timeout", "idle_in_transaction_session_timeout")]
    s = snap("memo-all", {"pg.sessions": [session(5, 7200), session(6, 400, state="active",
                                                                   blocked_by=[5])],
                          "pg.settings": settings})
    sel = Selection(select=("PG001", "PG002", "PG101", "PG501"))
    first = evaluate(s, CAT, Config(), sel)
    second = evaluate(again(s), CAT, Config(), sel)
    assert [id(f) for f in second.findings if f.rule == "PG501"] == [
        id(f) for f in first.findings if f.rule == "PG501"]
    evaluate_mod._LAST.clear()
    fresh = evaluate(again(s), CAT, Config(), sel)
    assert second.findings == fresh.findings == first.findings
    assert {f.rule for f in first.findings} == {"PG001", "PG002", "PG101", "PG501"}
    checks = load_checks()
    pure = {c.name for c in checks.values() if c.inputs is not None}
    # what reads the clock or the history is never reused
    assert not pure & {"pg_deadlocks", "innodb_deadlock", "probe_failed", "incomplete_coverage"}
    # PG202 only while its section lists no table (it reads both for each table it reports)
    no_table = checks["dead_tuples"].inputs
    assert callable(no_table)
    assert no_table(snap("memo-all", {"pg.dead_tuples": {"tables": []}})) is not None
    assert no_table(snap("memo-all", {"pg.dead_tuples": {"tables": [
        {"database": "shop", "schema": "public", "table": "t", "n_dead_tup": 1,
         "n_live_tup": 0}]}})) is None


def test_the_latest_deadlocks_record_is_built_once_per_status_read() -> None:
    """A server's targets share its InnoDB status section: one record per status read, not
    per target-cycle; another read (another deadlock object) gets its own."""
    from dbwatch.deadlocks.record import latest_deadlock
    from dbwatch.snapshot.my import InnodbStatusSection

    fix = Path(__file__).parent / "fixtures" / "innodb"
    status = InnodbStatusSection.from_text((fix / "mariadb-laravel-queue-index.txt").read_text())

    def my(target: str, sec: object) -> Snapshot:
        return Snapshot(target=target, engine="mariadb", server_version="10.11.6-MariaDB",
                        version_num=101106, taken_at=NOW, sections={"my.innodb_status": sec})

    first = latest_deadlock(my("a", status))
    assert first is not None and latest_deadlock(my("b", status)) is first
    other = InnodbStatusSection.from_text((fix / "mariadb-opposite-order.txt").read_text())
    second = latest_deadlock(my("a", other))
    assert second is not None and second is not first and second.key != first.key
    assert first.databases() == first.databases() and first.databases() is not first.databases()


def test_statement_rules_with_no_source_then_one() -> None:
    """QU401/QU402 find nothing while no statement text is readable (a new `Unavailable`
    every cycle: reused), and run as soon as digests are readable."""
    off = {"available": False, "reason": "performance_schema is OFF", "fix": "turn it on"}
    claim = ("SELECT * FROM `jobs` WHERE `queue` = ? AND ( ( `reserved_at` IS NULL AND "
             "`available_at` <= ? ) OR ( `reserved_at` <= ? ) ) ORDER BY `id` ASC "
             "LIMIT ? FOR UPDATE ")
    dig = {"available": True, "source": "performance_schema.events_statements_summary_by_digest",
           "limit": 500, "digests": [
               {"schema": "app", "text": "SELECT * FROM `jobs` WHERE `id` = ? LIMIT ? FOR UPDATE ",
                "calls": 120, "idle_seconds": 5},
               {"schema": "app", "text": "DELETE FROM `jobs` WHERE `id` = ? ", "calls": 118,
                "idle_seconds": 5},
               {"schema": "app", "text": claim, "calls": 130, "idle_seconds": 5}]}

    def my(history: Any, digests: Any) -> Snapshot:
        return Snapshot(target="memo-qu", engine="mariadb", server_version="10.11.6-MariaDB",
                        version_num=101106, taken_at=NOW,
                        sections={"my.statement_history": dict(history),
                                  "my.statement_digests": dict(digests)},
                        features=frozenset({"skip_locked"}))

    sel = Selection(select=("QU401", "QU402"))
    assert evaluate(my(off, off), CAT, Config(), sel).findings == []
    assert evaluate(my(off, off), CAT, Config(), sel).findings == []  # new objects: reused
    found = evaluate(my(off, dig), CAT, Config(), sel).findings
    assert sorted(f.rule for f in found) == ["QU401", "QU402"]
    assert evaluate(my(off, off), CAT, Config(), sel).findings == []


class CountingState(State):
    """The real State (SQLite), counting the history reads a check makes."""

    reads = 0

    def last_point(self, target: str, key: str, since_seconds: float) -> list[tuple[float, float]]:
        self.reads += 1
        return super().last_point(target, key, since_seconds)


def test_pg102_reads_no_history_for_a_counter_at_zero(tmp_path: Path) -> None:
    """A database that never counted a deadlock (the counter 0, or reset to 0 since the last
    look) has nothing PG102 could report: its history is not read; a counter above zero
    reads it and is compared with the last look (a reset restarts the count)."""
    st = CountingState(tmp_path / "s.db")
    try:
        sel = Selection(select=("PG102",))
        st.record_metric("memo-pg102z", "pg.deadlocks:shop", 5.0, NOW - 10)
        zero = snap("memo-pg102z", {"pg.deadlocks": [
            {"database": "shop", "deadlocks": 0, "stats_reset": None}]})
        assert evaluate(zero, CAT, Config(), sel, state=st).findings == []
        assert st.reads == 0
        three = snap("memo-pg102z", {"pg.deadlocks": [
            {"database": "shop", "deadlocks": 3, "stats_reset": None}]})
        found = evaluate(three, CAT, Config(), sel, state=st).findings
        assert st.reads >= 1 and [f.evidence["count"] for f in found] == [3]  # reset: 3 new
    finally:
        st.close()


def test_my102_reads_no_history_for_a_deadlock_outside_its_scope(tmp_path: Path) -> None:
    """MY102 on a schema the server's latest deadlock does not touch says nothing whatever
    the counter's history: not read; the schema it touches reads it."""
    from dbwatch.snapshot.my import InnodbStatusSection

    fix = Path(__file__).parent / "fixtures" / "innodb"
    status = InnodbStatusSection.from_text((fix / "mariadb-laravel-queue-index.txt").read_text())
    st = CountingState(tmp_path / "s.db")
    try:
        sel = Selection(select=("MY102",))

        def my(scope: str) -> Snapshot:
            return Snapshot(target=f"memo-my102-{scope}", engine="mariadb",
                            server_version="10.11.6-MariaDB", version_num=101106, taken_at=NOW,
                            scope=scope, sections={"my.innodb_status": status,
                                                   "my.innodb_counters": {"innodb_deadlocks": 4}})

        assert evaluate(my("shop"), CAT, Config(), sel, state=st).findings == []
        assert st.reads == 0
        evaluate(my("test"), CAT, Config(), sel, state=st)  # the deadlock's schema
        assert st.reads >= 1
    finally:
        st.close()


def test_the_memo_starts_over_when_the_server_changes() -> None:
    """A target's memo holds for one engine, scope, version and feature set: an upgraded
    server (another version_num) runs every rule again, on the very same sections."""
    sel = Selection(select=("PG501",))
    settings = [{"name": "statement_timeout", "setting": "0", "scope": "server", "role": None,
                 "database": None}]
    s = snap("memo-upgrade", {"pg.settings": settings})
    first = evaluate(s, CAT, Config(), sel).findings
    assert len(first) == 1
    same = evaluate(again(s), CAT, Config(), sel).findings
    assert [id(f) for f in same] == [id(f) for f in first]  # reused
    upgraded = evaluate(again(s, version_num=160000), CAT, Config(), sel).findings
    assert upgraded == first and not {id(f) for f in upgraded} & {id(f) for f in first}
    moved = evaluate(again(s, features=frozenset({"x"})), CAT, Config(), sel).findings
    assert moved == first and not {id(f) for f in moved} & {id(f) for f in upgraded}


def test_an_idle_mysql_servers_new_empty_reads_reuse_the_rules() -> None:
    """MY001/MY002/MY101 read the server's transactions and lock waits, shared reads that a
    fleet's target sees new at each cycle: while the server has none, a new read is the same
    object (no rows: one `NO_ROWS`; no waits: one per source), so the rules are not run again;
    a transaction appearing runs them (found at once), and its end too."""
    from dbwatch.checks import CHECKS

    def my(sections: dict[str, Any]) -> Snapshot:
        return Snapshot(target="memo-my-idle", engine="mariadb", server_version="10.11.6",
                        version_num=101106, taken_at=NOW, scope="shop", sections=sections)

    load_checks()
    ran: list[str] = []
    saved = {n: CHECKS[n] for n in ("long_transaction", "idle_in_transaction", "my_lock_waits")}
    for name, chk in saved.items():

        def counted(ctx: Any, fn: Any = chk.fn, name: str = name) -> Any:
            ran.append(name)
            return fn(ctx)

        CHECKS.replace(name, dataclasses.replace(chk, fn=counted))
    try:
        sel = Selection(select=("MY001", "MY002", "MY101"))
        waits = {"source": "mariadb_lock_waits.sql", "waits": []}
        assert evaluate(my({"my.trx": [], "my.lock_waits": waits}), CAT, Config(), sel).findings == []
        assert sorted(ran) == ["idle_in_transaction", "long_transaction", "my_lock_waits"]
        ran.clear()
        for _ in range(3):  # new reads of an idle server (new lists, built anew)
            assert evaluate(my({"my.trx": [], "my.lock_waits": dict(waits, waits=[])}), CAT,
                            Config(), sel).findings == []
        assert ran == []
        trx = {"thread_id": 7, "trx_id": "99", "trx_state": "RUNNING", "trx_seconds": 7200,
               "user": "app", "host": "h", "db": "shop", "command": "Sleep", "time": 7200,
               "state": "", "info": None, "trx_started": "2026-01-01 00:00:00"}
        found = evaluate(my({"my.trx": [trx], "my.lock_waits": waits}), CAT, Config(), sel).findings
        assert {f.rule for f in found} >= {"MY001"} and "long_transaction" in ran
        ran.clear()
        assert evaluate(my({"my.trx": [], "my.lock_waits": waits}), CAT, Config(), sel).findings == []
        assert "long_transaction" in ran  # the transaction ended: run again, nothing found
    finally:
        for name, chk in saved.items():
            CHECKS.replace(name, chk)
