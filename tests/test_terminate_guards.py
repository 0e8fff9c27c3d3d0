"""Pure terminate logic: criteria (ANDed), guards, planning, chain roots, horizon holders,
daemon eligibility and decisions, and the MY101 check over a snapshot. No database."""
from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from dbwatch.actions.daemon_action import daemon_decision, eligible
from dbwatch.actions.guards import (
    Criteria,
    Pin,
    Policy,
    Session,
    is_dump_statement,
    matches,
    plan,
    protection,
    statement_for,
)
from dbwatch.actions.my_kill import LiveTrx, live_transactions, same_live_trx
from dbwatch.actions.terminate import mark_holders
from dbwatch.catalogue import load_catalogue
from dbwatch.checks import CheckContext
from dbwatch.checks.lockgraph import LockGraph
from dbwatch.checks.my101_lock_waits import my_lock_waits
from dbwatch.config import TerminateConfig
from dbwatch.findings import Finding, SessionIdentity
from dbwatch.snapshot import Snapshot
from dbwatch.snapshot.my import MyThread
from dbwatch.snapshot.pg import PgSession

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


CANDIDATE = ("own", "blocks", "holds_horizon", "programs_known", "seen_at")
PG_NAMES = {"age": "xact_seconds", "idle": "state_seconds"}
MY_NAMES = {"age": "trx_seconds", "idle": "command_seconds", "application": "program",
            "query": "info", "database": "db", "rows_modified": "trx_rows_modified"}


def _candidate(target: str, engine: str, row: PgSession | MyThread,
               kw: dict[str, Any]) -> Session:
    return Session(target=target, engine=engine, row=row,
                   **{k: v for k, v in kw.items() if k in CANDIDATE})


def pg(pid: int = 10, **kw: Any) -> Session:
    """A candidate made of a pg.sessions row; age/idle are its xact/state seconds."""
    base: dict[str, Any] = {
        "pid": pid, "backend_start": T0, "xact_start": T0 + timedelta(seconds=5),
        "user": "app", "application": "worker", "host": "10.0.0.1", "database": "app",
        "state": "idle in transaction", "backend_type": "client backend", "age": 600.0,
        "idle": 590.0, "superuser": False}
    base.update(kw)
    fields = {PG_NAMES.get(k, k): v for k, v in base.items() if k not in CANDIDATE}
    return _candidate("t", "postgresql", PgSession(**fields), base)


def my(tid: int = 40, **kw: Any) -> Session:
    """A candidate made of a thread of terminate's listing; age/idle are its trx/command
    seconds, application its program name."""
    base: dict[str, Any] = {
        "thread_id": tid, "trx_id": "1234", "user": "app", "host": "10.0.0.2:5555",
        "command": "Sleep", "age": 600.0, "idle": 590.0, "superuser": False}
    base.update(kw)
    fields = {MY_NAMES.get(k, k): v for k, v in base.items() if k not in CANDIDATE}
    return _candidate("m", "mariadb", MyThread(**fields), base)


def test_criteria_are_anded() -> None:
    both = Criteria(older_than=300, idle_in_transaction=True)
    assert matches(pg(), both)
    assert not matches(pg(age=100.0), both)                        # idle but young
    assert not matches(pg(state="active"), both)   # old but busy
    assert not matches(pg(age=None), Criteria(older_than=0))       # no transaction: no age


def test_regex_filters() -> None:
    c = Criteria(match_user=re.compile("^app$"), match_host=re.compile(r"^10\."),
                 ignore_app=re.compile("cron"))
    assert matches(pg(), c)
    assert not matches(pg(user="app2"), c)
    assert not matches(pg(application="nightly-cron"), c)
    assert matches(pg(), Criteria(match_query=re.compile("jobs"))) is False
    assert matches(pg(query="select * from jobs"), Criteria(match_query=re.compile("jobs")))


def test_blocking_and_holding_criteria() -> None:
    assert not matches(pg(), Criteria(blocking=True))
    assert matches(pg(blocks=2), Criteria(blocking=True))
    assert matches(pg(holds_horizon=True), Criteria(holding_xmin=True))
    slot = Session(target="t", engine="postgresql", holds_horizon=True,
                   pin=Pin(kind="replication_slot", name="s1", xid_age=900))
    assert matches(slot, Criteria(holding_xmin=True))
    assert not matches(slot, Criteria(older_than=1))


def test_protections() -> None:
    p = Policy()
    assert protection(pg(is_self=True), p) == "dbwatch's own connection"
    assert protection(pg(own=True), p) == "dbwatch's own connection"  # by connection id
    assert protection(pg(application="dbwatch"), p) is None     # a name protects nothing
    assert protection(pg(application="dbwatch-audit"), p) is None
    assert "superuser" in str(protection(pg(superuser=True), p))
    assert protection(pg(superuser=True), Policy(include_superusers=True)) is None
    assert "walsender" in str(protection(pg(backend_type="walsender"), p))
    assert "autovacuum" in str(protection(pg(backend_type="autovacuum worker"), p))
    assert "system process" in str(protection(pg(backend_type="background worker"), p))
    assert "backup" in str(protection(pg(application="pg_dump"), p))
    copy = 'COPY public.jobs (id, queue) TO stdout;'
    assert "backup" in str(protection(pg(application="renamed", query=copy), p))
    assert protection(pg(application="pg_dump"), Policy(include_backups=True)) is None
    assert "protected user" in str(protection(pg(), Policy(protect_users=frozenset({"app"}))))
    assert "protected application" in str(
        protection(pg(), Policy(protect_apps=frozenset({"worker"}))))
    assert "identity not visible" in str(protection(pg(backend_start=None), p))
    assert "cancel does nothing" in str(protection(pg(), Policy(cancel=True)))
    assert protection(pg(state="active"), Policy(cancel=True)) is None


def test_mysql_protections() -> None:
    p = Policy()
    assert protection(my(), p) is None
    assert "system" in str(protection(my(user="system user", command="Daemon"), p))
    assert "system" in str(protection(my(command="Binlog Dump GTID"), p))
    assert "backup" in str(protection(my(query="SELECT /*!40001 SQL_NO_CACHE */ * FROM `t`"), p))
    assert "backup" in str(protection(my(application="mysqldump"), p))
    assert "cancel does nothing" in str(protection(my(), Policy(cancel=True)))
    assert "root" in str(protection(my(user="root", superuser=None), p))
    assert protection(my(user="root", superuser=False), p) is None
    for q in ("SHOW CREATE TABLE `t`", "FLUSH TABLES WITH READ LOCK", "show fields from `t`",
              "ROLLBACK TO SAVEPOINT sp", "START TRANSACTION /*!40100 WITH CONSISTENT SNAPSHOT */",
              "select column_name, extra, generation_expression, data_type from "
              "information_schema.columns where table_schema=database() and table_name='t0' "
              "order by ordinal_position"):
        assert is_dump_statement(q), q
        assert "backup" in str(protection(my(query=q), p))
    assert not is_dump_statement("select * from jobs for update")


def test_mysql_without_program_names_a_read_only_trx_may_be_a_dump() -> None:
    p = Policy()
    blind = my(programs_known=False, rows_modified=0)
    assert "may be a backup" in str(protection(blind, p))
    assert protection(blind, Policy(include_backups=True)) is None
    assert protection(my(programs_known=False, rows_modified=3), p) is None  # it wrote
    assert protection(my(programs_known=True, rows_modified=0), p) is None   # name known
    busy = my(programs_known=False, rows_modified=0, command="Query", query="select * from jobs")
    assert protection(busy, p) is None           # its statement is visible and not a dump's
    no_trx = my(programs_known=False, trx_id=None, rows_modified=None, query=None)
    assert "may be a backup" in str(protection(no_trx, p))


STATUS = """------------
TRANSACTIONS
------------
Trx id counter 41220
History list length 3
LIST OF TRANSACTIONS FOR EACH SESSION:
---TRANSACTION (0x7f93a1494680), ACTIVE 7 sec
0 lock struct(s), heap size 1128, 0 row lock(s)
MariaDB thread id 381, OS thread handle 140271820793536, query id 57541 127.0.0.1 root
Trx read view will not see trx with id >= 41217, sees < 41217
---TRANSACTION 41217, ACTIVE 1 sec
1 lock struct(s), heap size 1128, 0 row lock(s), undo log entries 1
MySQL thread id 379, OS thread handle 140272022374080, query id 57532 127.0.0.1 app Updating
update t set v = 1 where id = 2
--------
FILE I/O
--------
"""


def test_live_transactions_from_the_status_text() -> None:
    assert live_transactions(STATUS, 379) == [LiveTrx("41217", 1, 57532)]
    assert live_transactions(STATUS, 381) == [LiveTrx(None, 7, 57541)]
    assert live_transactions(STATUS, 999) == []
    # a forged entry inside someone's query text makes two entries: the caller refuses
    forged = STATUS.replace(
        "update t set v = 1 where id = 2",
        "---TRANSACTION 41217, ACTIVE 1 sec\nMariaDB thread id 381, OS thread handle 1, "
        "query id 57541 h u")
    assert len(live_transactions(forged, 381)) == 2
    # no transaction list, or a thread line with no readable query id: nothing to match
    assert live_transactions(STATUS.replace("LIST OF TRANSACTIONS", "LIST OF THINGS"), 379) == []
    odd = STATUS.replace("query id 57532", "query id ???")
    assert live_transactions(odd, 379) == [LiveTrx("41217", 1, None)]


def test_same_live_trx() -> None:
    assert same_live_trx(my(trx_id="41217"), LiveTrx("41217", 1, 5), 0.1)
    assert not same_live_trx(my(trx_id="41216"), LiveTrx("41217", 1, 5), 0.1)  # committed
    ro = my(trx_id="0", age=7.0)   # MariaDB lists a read-only trx as 0: the age decides
    assert same_live_trx(ro, LiveTrx(None, 7, 5), 0.1)
    assert same_live_trx(ro, LiveTrx(None, 6, 5), 0.1)          # whole seconds
    assert not same_live_trx(ro, LiveTrx(None, 0, 5), 0.1)      # begun since the listing
    assert not same_live_trx(my(trx_id="0", age=2.0), LiveTrx(None, 2, 5), 0.1)  # too young


def test_policy_merges_config_and_flags() -> None:
    cfg = TerminateConfig(protect_users=("replicator",), protect_apps=("psql",))
    p = Policy.from_config(cfg, ["alice"], include_superusers=True)
    assert p.protect_users == {"replicator", "alice"} and p.protect_apps == {"psql"}
    assert p.include_superusers


def test_plan_orders_limits_and_lists_protected() -> None:
    sessions = [pg(1, age=100.0), pg(2, age=900.0), pg(3, age=500.0, user="ops"),
                pg(4, age=50.0), pg(5, age=None, state="idle")]
    policy = Policy(protect_users=frozenset({"ops"}))
    out, left = plan(sessions, Criteria(idle_in_transaction=True), policy, limit=2)
    assert [(d.session.pid, d.action) for d in out] == [
        (2, "would_terminate"), (3, "skipped_protected"), (1, "would_terminate")]
    assert left == 1
    cancel, _ = plan([pg(9, state="active")],
                     Criteria(older_than=1), Policy(cancel=True))
    assert cancel[0].action == "would_cancel"
    assert statement_for(cancel[0].session, "would_cancel") == "SELECT pg_cancel_backend(9)"
    assert statement_for(my(), "terminated") == "KILL 40"
    assert statement_for(my(), "cancelled") == "KILL QUERY 40"


def test_standby_running_query_is_cancelled() -> None:
    out, _ = plan([pg(7, state="active", standby=True)],
                  Criteria(older_than=1), Policy())
    assert out[0].action == "would_cancel"
    out, _ = plan([pg(8, standby=True)], Criteria(older_than=1), Policy())
    assert out[0].action == "would_terminate"


def test_chain_roots() -> None:
    # 3 waits on 2, 2 waits on 1; 5 waits on 4 and 1: roots 1 (three behind) and 4 (one)
    assert LockGraph.from_blocked_by({3: [2], 2: [1], 5: [4, 1]}).roots() == {1: 3, 4: 1}
    assert LockGraph.from_blocked_by({1: [2], 2: [1]}).roots() == {}       # a deadlock cycle has no root


def test_holding_xmin_marks_only_what_pg201_reports() -> None:
    s = [pg(1, xid_age=50), pg(2, xid_age=50), pg(3, xid_age=10)]
    f1 = Finding(rule="PG201", severity="warning", target="t", subject="pid 1", summary="s",
                 fix="f", evidence={"kind": "backend"},
                 session=SessionIdentity("postgresql", "t", "app", 1, T0, T0 + timedelta(seconds=5)))
    slot = Finding(rule="PG201", severity="warning", target="t", subject="slot s", summary="s",
                   fix="f", evidence={"kind": "slot", "slot": "s", "xid_age": 80})
    marked = mark_holders(s, [f1, slot], "t")
    assert [x.pid for x in marked if x.holds_horizon and x.kind == "session"] == [1]
    (sl,) = [x for x in marked if x.kind == "replication_slot"]
    assert sl.name == "s" and sl.statement == "SELECT pg_drop_replication_slot('s')"
    assert [d.session.pid for d in plan(marked, Criteria(holding_xmin=True), Policy())[0]
            if d.action == "would_terminate"] == [1]
    assert mark_holders(s, [], "t") == s                       # PG201 reports nothing: none


def finding(rule: str = "PG002", target: str = "t", pid: int | None = 10,
            session: SessionIdentity | None = None, **ev: Any) -> Finding:
    evidence = {"age_seconds": 600.0}
    evidence.update(ev)
    if session is None and pid is not None:
        session = SessionIdentity("postgresql", target, "app", pid, T0, T0 + timedelta(seconds=5))
    return Finding(rule=rule, severity="warning", target=target, subject=f"pid {pid}",
                   summary="s", fix="f", evidence=evidence, identity=[rule, pid],
                   session=session)


def test_session_identity_round_trips_and_is_fingerprinted() -> None:
    f = finding()
    assert f.session is not None
    back = SessionIdentity.from_dict(f.to_dict()["session"])
    assert back == f.session
    assert dataclasses.replace(f, session=back).fingerprint == f.fingerprint
    other = SessionIdentity("postgresql", "t", "app", 10, T0 + timedelta(1), None)
    assert finding(session=other).fingerprint != f.fingerprint        # a recycled pid
    assert not SessionIdentity("mysql", "m", None, thread_id=3).usable  # no trx id


def test_eligible_filters_rules_targets_age_and_dedupes() -> None:
    cfg = TerminateConfig(enabled=True, after=300, rules=("PG001", "PG002", "MY101"))
    firing = [(finding(), 5.0), (finding("PG001"), 5.0), (finding("PG201"), 5.0),
              (finding(target="other"), 5.0), (finding(pid=11, age_seconds=100.0), 5.0),
              (finding(pid=12, age_seconds=None), 400.0)]
    got = eligible(firing, cfg, "t")
    assert [(f.rule, f.session.pid if f.session else None) for f in got] == [
        ("PG002", 10), ("PG002", 12)]
    assert got[0].session is not None and got[0].session.backend_start == T0


def test_lock_findings_carry_the_root() -> None:
    root = SessionIdentity("mariadb", "m", None, thread_id=3, trx_id="5")
    f = finding("MY101", "m", pid=None, session=root, thread_id=7, trx_id="9")
    (e,) = eligible([(f, 0.0)], TerminateConfig(enabled=True, after=0, rules=("MY101",)), "m")
    assert e is f and e.session == root


def test_daemon_decision() -> None:
    cfg = TerminateConfig(enabled=True, after=300)
    e = eligible([(finding(), 0.0)], cfg, "t")[0]
    assert daemon_decision(e, [pg()], Policy(), cfg).action == "would_terminate"
    newer = pg(xact_start=T0 + timedelta(seconds=99))        # committed and began again
    assert daemon_decision(e, [newer], Policy(), cfg).action == "gone"
    assert daemon_decision(e, [pg(backend_start=T0 + timedelta(1))], Policy(), cfg).action == "gone"
    assert daemon_decision(e, [], Policy(), cfg).action == "gone"
    prot = Policy.from_config(TerminateConfig(protect_users=("app",)))
    assert daemon_decision(e, [pg()], prot, cfg).action == "skipped_protected"
    young = eligible([(finding(), 0.0)], cfg, "t")[0]
    assert daemon_decision(young, [pg(age=10.0)], Policy(), cfg).action == "gone"
    assert daemon_decision(e, [pg()], Policy(), cfg, "app").action == "would_terminate"
    outside = daemon_decision(e, [pg()], Policy(), cfg, "billing")
    assert outside.action == "skipped_protected" and "outside this target's scope" in outside.reason
    slot = eligible([(finding("PG201", pid=None, kind="slot", age_seconds=None), 900.0)],
                    TerminateConfig(enabled=True, after=300, rules=("PG201",)), "t")[0]
    assert daemon_decision(slot, [pg()], Policy(), cfg).action == "skipped_protected"


def test_my101_check_names_the_root() -> None:
    rule = load_catalogue()["MY101"]
    waits = [
        {"waiting_thread_id": 30, "waiting_trx_id": "300", "wait_seconds": 40,
         "waiting_user": "w", "locked_table": "test.jobs", "locked_index": "PRIMARY",
         "lock_mode": "X", "blocking_thread_id": 20, "blocking_trx_id": "200"},
        {"waiting_thread_id": 20, "waiting_trx_id": "200", "wait_seconds": 50,
         "waiting_user": "w", "locked_table": "test.jobs", "locked_index": "PRIMARY",
         "lock_mode": "X", "blocking_thread_id": 10, "blocking_trx_id": "100",
         "blocking_user": "app", "blocking_command": "Sleep", "blocking_trx_seconds": 400,
         "blocking_command_seconds": 390},
    ]
    snap = Snapshot(target="m", engine="mariadb", server_version="10.11", version_num=101100,
                    taken_at=0.0, sections={"my.lock_waits": {"source": "x", "waits": waits}})
    ctx = CheckContext(rule=rule, snapshot=snap, thresholds=rule.thresholds, params={})
    found = {f.evidence["thread_id"]: f for f in my_lock_waits(ctx)}
    assert set(found) == {30, 20}
    assert found[30].evidence["root_thread_id"] == 10
    assert found[30].evidence["waiters_behind_root"] == 2
    assert "root blocker thread 10 (idle in transaction" in found[30].summary
    assert "KILL 10;" in found[30].fix
    assert found[30].session == SessionIdentity("mariadb", "m", None, thread_id=10, trx_id="100")


def test_cli_bad_input_is_one_line_exit_3() -> None:
    for extra in (["--match-user", "("], ["--older-than", "soon"], []):
        r = subprocess.run([sys.executable, "-m", "dbwatch", "terminate", "postgresql://x@h/db",
                            *extra], check=False, capture_output=True, text=True, timeout=60)
        assert r.returncode == 3, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_candidate_is_the_session_row_not_a_copy() -> None:
    from dbwatch.actions.sessions import candidates

    rows = (PgSession(pid=10, backend_start=T0, xact_start=T0 + timedelta(seconds=5),
                      state="idle in transaction", xact_seconds=600.0, state_seconds=590.0,
                      database="app", blocked_by=()),
            PgSession(pid=11, backend_start=T0, state="active", database="app", blocked_by=(10,)))
    got = candidates(rows, "t", own=frozenset({11}))
    assert [s.row for s in got] == list(rows) and all(s.row is r for s, r in zip(got, rows))
    ident = rows[0].identity("t")
    assert (got[0].pid, got[0].backend_start, got[0].xact_start) == (
        ident.pid, ident.backend_start, ident.xact_start)
    assert got[0].blocks == 1 and got[0].age == 600.0 and got[0].idle == 590.0
    assert got[1].is_self and not rows[1].is_self          # own by connection id, row untouched
    # a candidate is exactly one of a row, a name or a pin: never nothing to judge it by
    for bad in ({}, {"row": rows[0], "pin": Pin(kind="replication_slot")},
                {"row": rows[0], "named": ident}):
        with pytest.raises(ValueError):
            Session(target="t", engine="postgresql", **bad)
    gone = Session.named_by("t", ident)
    assert (gone.pid, gone.backend_start, gone.xact_start, gone.kind) == (10, T0, None, "session")


def test_daemon_terminate_takes_the_cycles_own_finding(tmp_path: Any) -> None:
    """The firing rows written this cycle stand for the cycle's Finding objects (the one the
    state kept: first of its fingerprint at the highest severity), so the identity terminate
    compares is the row's datetimes, not their JSON text read back; a row of a rule that did
    not run this cycle comes from the state."""
    from dbwatch.daemon.dispatch import due_findings
    from dbwatch.daemon.state import State

    st = State(str(tmp_path / "s.db"))
    warn, crit = finding(), Finding(**{**finding().__dict__, "severity": "critical"})
    other = finding(pid=11)
    assert warn.fingerprint == crit.fingerprint
    st.update("t", [other], now=100.0)
    tr = st.update("t", [warn, crit], now=200.0, keep_rules={"PG002"})
    due = dict((f.fingerprint, (f, age)) for f, age in due_findings(tr.firing, [warn, crit], 260.0))
    assert due[crit.fingerprint][0] is crit and due[crit.fingerprint][1] == 60.0
    kept, age = due[other.fingerprint]                  # from the state: rebuilt, equal
    assert kept is not other and kept.session == other.session and age == 160.0


def test_daemon_decision_text_from_the_finding_is_scrubbed_as_the_state_stores_it() -> None:
    """The daemon decides on the cycle's own Finding, not on the state's scrubbed copy: the
    finding's text that goes into the action record is scrubbed as before."""
    from dbwatch.targets.secrets import register_secret

    secret = "Vq7Jx!Kzw"  # process-wide: no 4-letter run of it occurs in any other test's text
    register_secret(secret)
    f = Finding(rule="PG201", severity="warning", target="t", subject="slot s", summary="s",
                fix=f"connect with password {secret} and drop it", evidence={"kind": "slot"})
    cfg = TerminateConfig(enabled=True, after=0, rules=("PG201",))
    (e,) = eligible([(f, 10.0)], cfg, "t")
    d = daemon_decision(e, [], Policy(), cfg)
    assert d.action == "skipped_protected" and "drop it" in d.reason
    assert secret not in d.reason and secret not in str(d.to_dict())


def test_daemon_kill_compares_raw_identity_not_the_states_scrubbed_copy(tmp_path: Any) -> None:
    """The state scrubs every text of a stored finding, identity included: a database name
    holding a fragment of a registered password came back masked, so the stored finding's
    session looked outside the target's scope and the kill was refused. The cycle's own
    Finding carries the row's values."""
    from dbwatch.daemon.dispatch import due_findings
    from dbwatch.daemon.state import State
    from dbwatch.targets.secrets import register_secret

    register_secret("Wq8vJ!kzQ")  # process-wide: no 4-letter run of it in any other test's text
    db = "wq8v_app"
    ident = SessionIdentity("postgresql", "t", db, 10, T0, T0 + timedelta(seconds=5))
    f = finding(session=ident)
    st = State(str(tmp_path / "s.db"))
    tr = st.update("t", [f], now=100.0)
    stored = tr.firing[0].finding.session
    assert stored is not None and stored.database != db          # masked in the state
    cfg = TerminateConfig(enabled=True, after=300)
    ((cycle, _),) = due_findings(tr.firing, [f], 160.0)
    assert cycle is f
    e = eligible([(cycle, 0.0)], cfg, "t")[0]
    live = [pg(database=db)]
    assert daemon_decision(e, live, Policy(), cfg, db).action == "would_terminate"
    old = eligible([(tr.firing[0].finding, 0.0)], cfg, "t")[0]   # what the daemon used before
    assert daemon_decision(old, live, Policy(), cfg, db).action == "skipped_protected"


def test_mysql_a_dumps_transaction_stays_protected_between_its_marked_statements() -> None:
    """Seen once running a dump's statement, the same transaction (target, thread, trx id) is
    protected while it runs an unmarked one (mysqldump's short `select @@…` between its
    SHOW CREATE / SQL_NO_CACHE reads), even when its statement is visible; another transaction
    of the thread, or the same ids on another target, is not."""
    import dbwatch.actions.guards as guards

    p = Policy()
    t0 = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    marked = my(tid=77, trx_id="421", programs_known=False, rows_modified=0, command="Query",
                query="SELECT /*!40001 SQL_NO_CACHE */ * FROM `t0`", trx_started=t0)
    between = my(tid=77, trx_id="421", programs_known=False, rows_modified=0, command="Query",
                 query="select @@collation_database", trx_started=t0)
    assert protection(between, p) is None            # never seen as a dump's yet
    assert "backup" in str(protection(marked, p))
    assert "backup" in str(protection(between, p))
    assert protection(between, Policy(include_backups=True)) is None
    later = my(tid=77, trx_id="999", programs_known=False, rows_modified=0, command="Query",
               query="select @@collation_database", trx_started=t0)
    assert protection(later, p) is None              # a new transaction of the thread
    again = dataclasses.replace(between, row=dataclasses.replace(
        between.row, trx_started=t0 + timedelta(seconds=5)))
    assert protection(again, p) is None              # its read-only id reused by the next one
    other = dataclasses.replace(between, target="elsewhere")
    assert protection(other, p) is None              # the same ids on another server
    for n in range(guards.DUMP_TRX_MAX + 5):         # bounded: the oldest are forgotten
        protection(my(tid=1000 + n, trx_id=str(n), query="SHOW CREATE TABLE `t`",
                      trx_started=t0), p)
    assert len(guards._DUMP_TRX) == guards.DUMP_TRX_MAX
    assert protection(between, p) is None
