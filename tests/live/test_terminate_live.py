"""`dbwatch terminate` and the daemon's terminate action against real sessions on the local
PostgreSQL and MariaDB: offenders end, protected/young/own sessions survive, stale identities
are `gone`, dry runs change nothing, and the least-privilege grants suffice."""
from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pymysql
import pytest

from dbwatch.actions.guards import Criteria, Policy, plan, protection
from dbwatch.actions.sessions import read_sessions
from dbwatch.actions.daemon_action import DaemonTerminator
from dbwatch.actions.terminate import Request, execute, run_target
from dbwatch.commands.terminate import pg201_findings
from dbwatch.catalogue import Thresholds, load_catalogue
from dbwatch.config import Config, RuleOverride, TerminateConfig
from dbwatch.evaluate import Selection
from dbwatch.findings import Finding
from dbwatch.pipeline import probe_target
from dbwatch.snapshot import Snapshot
from dbwatch.targets import TargetSpec, open_target, spec_for
from schemas import load_json

PG = "postgresql://postgres@127.0.0.1:5432/test"
MY = "mysql://root@127.0.0.1:3306/test"
OLD = 2.5          # seconds an "old" session has been open before dbwatch looks
CLI_OLD = 10.0     # the same for the CLI tests: a dbwatch run takes 2 s to start, 5+ s under load


def _up(fn: Callable[[], Any]) -> bool:
    try:
        fn()
        return True
    except (psycopg.Error, pymysql.Error, OSError):
        return False


PG_UP = _up(lambda: psycopg.connect(PG, connect_timeout=2).close())
MY_UP = _up(lambda: pymysql.connect(host="127.0.0.1", user="root", database="test",
                                    connect_timeout=2).close())
needs_pg = pytest.mark.skipif(not PG_UP, reason="no PostgreSQL at 127.0.0.1:5432")
needs_my = pytest.mark.skipif(not MY_UP, reason="no MariaDB at 127.0.0.1:3306")


def wait_until(cond: Callable[[], bool], timeout: float = 8.0, every: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(every)
    return cond()


class KeepYoung:
    """Restarts a session's transaction every 0.3 s in a thread, so it stays younger than any
    threshold however slowly a loaded machine starts the CLI (the pid/thread is unchanged)."""

    def __init__(self, renew: Callable[[], Any]) -> None:
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(renew,), daemon=True)
        self.thread.start()

    def _run(self, renew: Callable[[], Any]) -> None:
        while not self.stop.wait(0.3):
            renew()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)


def state_store() -> Any:
    """The daemon's real State when dbwatch/state.py exists; a recording stub otherwise."""
    try:
        from dbwatch.daemon.state import State
        return State(":memory:")
    except ImportError:
        class Stub:
            def __init__(self) -> None:
                self.rows: list[dict[str, Any]] = []

            def record_action(self, target: str, rule: str, fingerprint: str, subject: str,
                              action: str, detail: Any) -> None:
                self.rows.append({"target": target, "rule": rule, "action": action,
                                  "fingerprint": fingerprint, "detail": detail})

            def actions(self, target: str | None = None, limit: int = 100) -> list[Any]:
                return self.rows[::-1][:limit]
        return Stub()


def cycle_for(spec: TargetSpec, rule: str, users: set[str]) -> tuple[list[Finding], Snapshot]:
    """The real pipeline (probes -> evaluate) with the rule's threshold lowered to 1s: the
    findings and the cycle's snapshot (the daemon's terminate acts on its rows)."""
    config = Config(rules={rule: RuleOverride(thresholds=Thresholds("duration", 1.0, None))})
    res = probe_target(spec, load_catalogue(), config, Selection((rule,)))
    return [f for f in res.evaluation.findings if f.rule == rule and
            (f.evidence.get("user") in users or f.evidence.get("root_user") in users)], \
        res.snapshot


def findings_for(spec: TargetSpec, rule: str, users: set[str]) -> list[Finding]:
    return cycle_for(spec, rule, users)[0]


# --- PostgreSQL -----------------------------------------------------------------------

class PgWorld:
    """Roles, a table and sessions made by one test; all dropped/closed at teardown."""

    def __init__(self, admin: Any, uniq: str) -> None:
        self.admin, self.uniq = admin, uniq
        self.app, self.prot, self.mon = f"dbw_app_{uniq}", f"dbw_prot_{uniq}", f"dbw_mon_{uniq}"
        self.table = f"dbw_term_{uniq}"
        self.conns: list[Any] = []
        for role in (self.app, self.prot):
            admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"CREATE TABLE {self.table} (id int PRIMARY KEY, v int)")
        admin.execute(f"INSERT INTO {self.table} SELECT g, 0 FROM generate_series(1, 9) g")
        admin.execute(f"GRANT SELECT, UPDATE ON {self.table} TO {self.app}, {self.prot}")

    def open(self, role: str, app: str = "worker", db: str = "test") -> Any:
        conn = psycopg.connect(f"postgresql://{role}@127.0.0.1:5432/{db}",
                               application_name=app)
        self.conns.append(conn)
        return conn

    def offender(self, role: str, app: str = "worker") -> Any:
        """Idle in transaction after a write (holds an XID and its row lock)."""
        conn = self.open(role, app)
        conn.execute("SELECT txid_current()")
        return conn

    def alive(self, pid: int) -> bool:
        return self.admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s",
                                  (pid,)).fetchone() is not None

    def close(self) -> None:
        for c in self.conns:
            c.close()
        roles = [self.app, self.prot, self.mon]
        self.admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           "WHERE usename = ANY(%s)", (roles,))
        self.admin.execute(f"DROP TABLE IF EXISTS {self.table}")
        for role in roles:
            self.admin.execute(f"DROP ROLE IF EXISTS {role}")


@pytest.fixture
def pgw(pg_admin: Any, uniq: str) -> Iterator[PgWorld]:
    world = PgWorld(pg_admin, uniq)
    yield world
    world.close()


def cli(*args: str) -> tuple[int, Any, str]:
    r = subprocess.run([sys.executable, "-m", "dbwatch", "terminate", *args, "--format", "json"],
                       check=False, capture_output=True, text=True, timeout=60)
    return r.returncode, load_json(r.stdout, "terminate") if r.stdout.strip() else None, r.stderr


@needs_pg
def test_pg_acceptance_via_cli(pgw: PgWorld) -> None:
    """An app user's old idle transaction, a protected user's as old, a young one, and a
    dbwatch-labelled one: the dry run ends nothing; --execute --protect-user ends the offender.
    The threshold leaves room for two CLI start-ups (~2 s each here) before young turns old."""
    offender = pgw.offender(pgw.app)
    protected = pgw.offender(pgw.prot)
    own = pgw.offender(pgw.app, app="dbwatch")
    time.sleep(CLI_OLD)
    young = pgw.offender(pgw.app)
    keep = KeepYoung(lambda: (young.commit(), young.execute("SELECT txid_current()")))
    pids = {n: c.info.backend_pid for n, c in
            (("offender", offender), ("protected", protected), ("own", own), ("young", young))}
    base = [PG, "--idle-in-transaction", "--older-than", f"{CLI_OLD - 0.5}s",
            "--match-user", f"^({pgw.app}|{pgw.prot})$"]

    rc, dry, err = cli(*base)
    assert rc == 0, err
    acts = {r["pid"]: r["action"] for r in dry}
    assert acts == {pids["offender"]: "would_terminate", pids["protected"]: "would_terminate",
                    pids["own"]: "would_terminate"}     # calling itself dbwatch protects nothing
    assert {r["database"] for r in dry} == {"test"}
    assert all(pgw.alive(p) for p in pids.values())                 # the dry run ended nothing

    rc, done, err = cli(*base, "--execute", "--protect-user", pgw.prot)
    assert rc == 0, err
    rows = {r["pid"]: r for r in done}
    assert rows[pids["offender"]]["action"] == "terminated"
    assert rows[pids["offender"]]["statement"] == f"SELECT pg_terminate_backend({pids['offender']})"
    assert rows[pids["protected"]]["action"] == "skipped_protected"
    assert rows[pids["protected"]]["reason"] == f"protected user {pgw.prot}"
    assert rows[pids["own"]]["action"] == "terminated"
    assert pids["young"] not in rows
    assert not pgw.alive(pids["offender"]) and not pgw.alive(pids["own"])
    assert all(pgw.alive(pids[n]) for n in ("protected", "young"))
    keep.close()
    with pytest.raises(psycopg.OperationalError):
        offender.execute("SELECT 1")


@needs_pg
def test_pg_stale_identity_is_gone(pgw: PgWorld) -> None:
    """Listed, then the offender commits and begins again before the kill: nothing is hit."""
    sess = pgw.offender(pgw.app)
    time.sleep(OLD)
    spec = spec_for(PG)
    conn = open_target(spec)
    try:
        crit = Criteria(idle_in_transaction=True, older_than=2,
                        match_user=re.compile(f"^{pgw.app}$"))
        (decision,), _ = plan(read_sessions(conn, spec.name), crit, Policy())
        assert decision.action == "would_terminate"
        assert decision.session.pid == sess.info.backend_pid
        sess.commit()
        sess.execute("SELECT txid_current()")              # a new transaction, same backend
        assert execute(conn, decision).action == "gone"
        assert pgw.alive(sess.info.backend_pid)
        sess.execute("SELECT 1")                            # and it still works
        # the offender disconnects and someone reconnects: the old identity is gone too
        old_pid = sess.info.backend_pid
        sess.close()
        again = pgw.offender(pgw.app)
        assert execute(conn, decision).action == "gone"
        assert pgw.alive(again.info.backend_pid) and not pgw.alive(old_pid)
    finally:
        conn.close()


@needs_pg
def test_pg_blocking_root_is_ended_and_the_waiter_proceeds(pgw: PgWorld) -> None:
    root = pgw.open(pgw.app)
    root.execute(f"UPDATE {pgw.table} SET v = 1 WHERE id = 1")
    waiter = pgw.open(pgw.app)
    waiter.execute("SET lock_timeout = '20s'")
    result: dict[str, Any] = {}

    def wait_for_lock() -> None:
        try:
            waiter.execute(f"UPDATE {pgw.table} SET v = 2 WHERE id = 1")
            waiter.commit()
            result["ok"] = True
        except psycopg.Error as exc:
            result["error"] = str(exc)

    t = threading.Thread(target=wait_for_lock)
    t.start()
    assert wait_until(lambda: pgw.admin.execute(
        "SELECT 1 FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'",
        (waiter.info.backend_pid,)).fetchone() is not None)
    req = Request(Criteria(blocking=True, match_user=re.compile(f"^{pgw.app}$")), Policy(),
                  execute=True)
    decisions, _ = run_target(spec_for(PG), req)
    assert [(d.session.pid, d.action, d.session.blocks) for d in decisions] == [
        (root.info.backend_pid, "terminated", 1)]
    t.join(10)
    assert result == {"ok": True}


@needs_pg
def test_pg_least_privileges_suffice(pgw: PgWorld) -> None:
    """contrib/grants/postgresql.sql: pg_monitor + pg_signal_backend, no superuser."""
    pgw.admin.execute(f"CREATE ROLE {pgw.mon} LOGIN IN ROLE pg_monitor, pg_signal_backend")
    offender = pgw.offender(pgw.app)
    time.sleep(OLD)
    spec = spec_for(f"postgresql://{pgw.mon}@127.0.0.1:5432/test")
    req = Request(Criteria(older_than=2, match_user=re.compile(f"^{pgw.app}$")), Policy(),
                  execute=True)
    decisions, _ = run_target(spec, req)
    assert [d.action for d in decisions] == ["terminated"]
    assert not pgw.alive(offender.info.backend_pid)


@needs_pg
def test_pg_daemon_terminate(pgw: PgWorld) -> None:
    first = pgw.offender(pgw.app)
    time.sleep(0.3)
    second = pgw.offender(pgw.app)
    protected = pgw.offender(pgw.prot)
    time.sleep(OLD)
    spec = spec_for(PG, "pg-local")
    found = findings_for(spec, "PG002", {pgw.app, pgw.prot})
    assert len(found) == 3
    firing = [(f, 1.0) for f in found]
    state, told, terminator = state_store(), [], DaemonTerminator()
    base = TerminateConfig(enabled=True, dry_run=True, rules=("PG002",), after=2.0,
                           protect_users=(pgw.prot,), max_per_cycle=1)

    def run(**kw: Any) -> list[dict[str, Any]]:
        cfg = TerminateConfig(**{**base.__dict__, **kw})
        # each daemon cycle acts on its own fresh snapshot; the firing findings stay
        fresh = cycle_for(spec, "PG002", {pgw.app, pgw.prot})[1]
        return [a.to_json() for a in terminator.run(spec, cfg, firing, state, told.append, fresh)]

    assert run(enabled=False) == []
    assert run(after=3600.0, dry_run=False) == []
    dry = run()
    assert sorted(a["action"] for a in dry) == ["skipped_protected", "would_terminate"]
    assert [a["pid"] for a in dry if a["action"] == "would_terminate"] == [first.info.backend_pid]
    assert run() == []                                  # a would-have is announced once
    assert all(pgw.alive(c.info.backend_pid) for c in (first, second, protected))

    done = run(dry_run=False)                           # max_per_cycle = 1: the oldest first
    assert [(a["pid"], a["action"]) for a in done] == [(first.info.backend_pid, "terminated")]
    assert pgw.alive(second.info.backend_pid)
    done = run(dry_run=False)                           # the stale finding of `first` is gone
    assert sorted((a["pid"], a["action"]) for a in done) == sorted(
        [(first.info.backend_pid, "gone"), (second.info.backend_pid, "terminated")])
    assert not pgw.alive(second.info.backend_pid) and pgw.alive(protected.info.backend_pid)
    recorded = [a["action"] for a in state.actions("pg-local")]
    assert recorded.count("terminated") == 2 and "would_terminate" in recorded
    assert len(told) == len(recorded)
    assert all(a.rule == "PG002" and a.target == "pg-local" for a in told)


# --- MariaDB ----------------------------------------------------------------------------

class MyWorld:
    def __init__(self, admin: Any, uniq: str) -> None:
        self.admin, self.uniq = admin, uniq
        self.app, self.prot, self.mon = f"dbw_app_{uniq}", f"dbw_prot_{uniq}", f"dbw_mon_{uniq}"
        self.table = f"dbw_term_{uniq}"
        self.conns: list[Any] = []
        self.q(f"CREATE TABLE {self.table} (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
        self.q(f"INSERT INTO {self.table} VALUES " + ",".join(f"({i},0)" for i in range(1, 10)))
        for user in (self.app, self.prot):
            self.q(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'")
            self.q(f"GRANT SELECT, UPDATE ON test.{self.table} TO '{user}'@'%'")

    def q(self, sql: str, args: Any = None) -> list[Any]:
        with self.admin.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())

    def open(self, user: str) -> Any:
        conn = pymysql.connect(host="127.0.0.1", user=user, password="pw", database="test",
                               autocommit=False)
        self.conns.append(conn)
        return conn

    def offender(self, user: str, row: int) -> Any:
        conn = self.open(user)
        with conn.cursor() as cur:
            cur.execute(f"UPDATE {self.table} SET v = v + 1 WHERE id = %s", (row,))
        return conn

    def alive(self, conn: Any) -> bool:
        return bool(self.q("SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = %s",
                           (conn.thread_id(),)))

    def value(self, row: int) -> int:
        return int(self.q(f"SELECT v FROM {self.table} WHERE id = %s", (row,))[0][0])

    def close(self) -> None:
        for c in self.conns:
            try:
                c.close()
            except pymysql.Error:
                pass
        users = (self.app, self.prot, self.mon)
        for (tid,) in self.q("SELECT ID FROM information_schema.PROCESSLIST WHERE USER IN "
                             "(%s, %s, %s)", users):
            try:
                self.q("KILL %s", (int(tid),))
            except pymysql.Error:
                pass
        for user in users:
            self.q(f"DROP USER IF EXISTS '{user}'@'%'")
        self.q(f"DROP TABLE IF EXISTS {self.table}")


@pytest.fixture
def myw(my_admin: Any, uniq: str) -> Iterator[MyWorld]:
    world = MyWorld(my_admin, uniq)
    yield world
    world.close()


@needs_my
def test_my_offender_ended_protected_young_own_survive(myw: MyWorld) -> None:
    offender = myw.offender(myw.app, 1)
    protected = myw.offender(myw.prot, 2)
    time.sleep(CLI_OLD)
    young = myw.offender(myw.app, 3)

    def renew() -> None:
        young.commit()
        with young.cursor() as cur:
            cur.execute(f"UPDATE {myw.table} SET v = v + 1 WHERE id = 3")
    keep = KeepYoung(renew)
    base = [MY, "--idle-in-transaction", "--older-than", f"{CLI_OLD - 0.5}s",
            "--match-user", f"^({myw.app}|{myw.prot})$"]
    rc, dry, err = cli(*base)
    assert rc == 0, err
    assert {r["thread_id"]: r["action"] for r in dry} == {
        offender.thread_id(): "would_terminate", protected.thread_id(): "would_terminate"}
    assert all(myw.alive(c) for c in (offender, protected, young))

    rc, done, err = cli(*base, "--execute", "--protect-user", myw.prot)
    assert rc == 0, err
    rows = {r["thread_id"]: r for r in done}
    assert rows[offender.thread_id()]["action"] == "terminated"
    assert rows[offender.thread_id()]["statement"] == f"KILL {offender.thread_id()}"
    assert rows[protected.thread_id()]["action"] == "skipped_protected"
    assert wait_until(lambda: not myw.alive(offender))
    assert myw.alive(protected) and myw.alive(young)
    keep.close()
    assert wait_until(lambda: myw.value(1) == 0)        # the offender's update rolled back

    conn = open_target(spec_for(MY))                     # dbwatch's own connection
    try:
        own = [s for s in read_sessions(conn, "m") if s.is_self]
        assert [s.thread_id for s in own] == [conn.thread_id]   # type: ignore[attr-defined]
        assert protection(own[0], Policy(include_superusers=True)) == "dbwatch's own connection"
    finally:
        conn.close()


@needs_my
def test_my_stale_identity_is_gone(myw: MyWorld) -> None:
    sess = myw.offender(myw.app, 1)
    time.sleep(OLD)
    spec = spec_for(MY)
    conn = open_target(spec)
    try:
        crit = Criteria(idle_in_transaction=True, older_than=2,
                        match_user=re.compile(f"^{myw.app}$"))
        (decision,), _ = plan(read_sessions(conn, spec.name), crit, Policy())
        assert decision.action == "would_terminate"
        sess.commit()
        with sess.cursor() as cur:                          # a new trx on the same thread
            cur.execute(f"UPDATE {myw.table} SET v = v + 1 WHERE id = 2")
        assert execute(conn, decision).action == "gone"
        assert myw.alive(sess)
        sess.rollback()
    finally:
        conn.close()


@needs_my
def test_my_lock_wait_root_my101_and_blocking(myw: MyWorld) -> None:
    root = myw.offender(myw.app, 4)
    waiter = myw.open(myw.app)
    result: dict[str, Any] = {}

    def wait_for_lock() -> None:
        try:
            with waiter.cursor() as cur:
                cur.execute("SET SESSION innodb_lock_wait_timeout = 20")
                cur.execute(f"UPDATE {myw.table} SET v = 7 WHERE id = 4")
            waiter.commit()
            result["ok"] = True
        except pymysql.Error as exc:
            result["error"] = str(exc)

    t = threading.Thread(target=wait_for_lock)
    t.start()
    # every 0.25 s: InnoDB refreshes its information_schema cache only after 0.1 s without
    # readers, so polling faster would keep reading the same stale rows
    assert wait_until(lambda: bool(myw.q(
        "SELECT 1 FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT' "
        "AND trx_mysql_thread_id = %s", (waiter.thread_id(),))), every=0.25), result
    time.sleep(1.3)
    (f,) = findings_for(spec_for(MY, "my-local"), "MY101", {myw.app})
    ev = f.evidence
    assert (ev["thread_id"], ev["blocking_thread_id"], ev["root_thread_id"]) == (
        waiter.thread_id(), root.thread_id(), root.thread_id())
    assert ev["table"] == f"test.{myw.table}" and ev["index"] == "PRIMARY"
    assert ev["source"] == "lock_waits_innodb" and ev["root_state"] == "idle in transaction"
    assert f"root blocker thread {root.thread_id()}" in f.summary

    req = Request(Criteria(blocking=True, match_user=re.compile(f"^{myw.app}$")), Policy(),
                  execute=True)
    decisions, _ = run_target(spec_for(MY), req)
    assert [(d.session.thread_id, d.action) for d in decisions] == [
        (root.thread_id(), "terminated")]
    t.join(15)
    assert result == {"ok": True}


@needs_my
def test_my_least_privileges_and_daemon(myw: MyWorld) -> None:
    """contrib/grants/mariadb.sql (PROCESS, CONNECTION ADMIN) drives the daemon's action."""
    myw.q(f"CREATE USER '{myw.mon}'@'%' IDENTIFIED BY 'pw'")
    myw.q(f"GRANT PROCESS, CONNECTION ADMIN ON *.* TO '{myw.mon}'@'%'")
    offender = myw.offender(myw.app, 5)
    protected = myw.offender(myw.prot, 6)
    time.sleep(OLD)
    spec = spec_for(f"mysql://{myw.mon}:pw@127.0.0.1:3306", "my-local")
    found = findings_for(spec, "MY002", {myw.app, myw.prot})
    assert len(found) == 2
    state, told = state_store(), []
    cfg = TerminateConfig(enabled=True, dry_run=False, rules=("MY002",), after=2.0,
                          protect_users=(myw.prot,), max_per_cycle=3)
    done = DaemonTerminator().run(spec, cfg, [(f, 1.0) for f in found], state, told.append)
    assert {(a.decision["thread_id"], a.action) for a in done} == {
        (offender.thread_id(), "terminated"), (protected.thread_id(), "skipped_protected")}
    assert wait_until(lambda: not myw.alive(offender)) and myw.alive(protected)
    assert len(told) == 2 and len(state.actions("my-local")) == 2


# --- a throwaway cluster: prepared transactions (explicit only) and a standby's query ------

sys.path.insert(0, str(Path(__file__).parent))
from pgcluster import PgCluster, available

needs_initdb = pytest.mark.skipif(not available(), reason="no PostgreSQL binaries for initdb")


def pg201(spec: TargetSpec) -> list[Finding]:
    """PG201's findings as `terminate --holding-xmin` reads them, its threshold at 1s."""
    config = Config(rules={"PG201": RuleOverride(thresholds=Thresholds("duration", 1.0, None))})
    found, why = pg201_findings(spec, load_catalogue(), config)
    assert why is None
    return found


@pytest.fixture(scope="module")
def cluster() -> Iterator[PgCluster]:
    with PgCluster.create({"max_prepared_transactions": "5"}) as pri:
        pri.psql("CREATE ROLE dbw_app LOGIN; CREATE TABLE t (id int); "
                 "GRANT SELECT ON t TO dbw_app")
        yield pri


@needs_initdb
def test_pg_holding_xmin_selects_the_holder_only(cluster: PgCluster) -> None:
    """Own cluster: on the shared server other tests' sessions may hold an older horizon."""
    url = cluster.url().replace("postgres@", "dbw_app@")
    holder, writer = psycopg.connect(url), psycopg.connect(url)
    try:
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM t")            # a snapshot: backend_xmin
        with psycopg.connect(cluster.url(), autocommit=True) as other:
            other.execute("SELECT txid_current()")          # move the XID counter on
        time.sleep(1.2)
        writer.execute("SELECT txid_current()")             # too young for PG201 (1s)
        req = Request(Criteria(holding_xmin=True, match_user=re.compile("^dbw_app$")),
                      Policy(), execute=True)
        spec = spec_for(cluster.url())
        decisions, _ = run_target(spec, req, pg201(spec))
        assert [(d.session.pid, d.action) for d in decisions] == [
            (holder.info.backend_pid, "terminated")]
        assert decisions[0].session.xid_age is not None and decisions[0].session.xid_age >= 2
        assert writer.execute("SELECT 1").fetchone() == (1,)
    finally:
        holder.close()
        writer.close()


@needs_initdb
def test_pg_prepared_xact_only_explicitly_and_standby_query_cancelled(cluster: PgCluster) -> None:
    pri = cluster
    with psycopg.connect(pri.url()) as x:
        x.execute("INSERT INTO t VALUES (1)")
        x.execute("PREPARE TRANSACTION 'dbw''s gid'")
    gid, url = "dbw's gid", pri.url()
    everyone = Request(Criteria(holding_xmin=True), Policy(), execute=True)
    time.sleep(1.2)
    listed = [d for d in run_target(spec_for(url), everyone, pg201(spec_for(url)))[0]
              if d.session.kind == "prepared_xact"]
    assert [(d.action, d.session.name) for d in listed] == [("skipped_protected", gid)]
    assert listed[0].to_dict()["statement"] == "ROLLBACK PREPARED 'dbw''s gid'"
    assert pri.psql("SELECT count(*) FROM pg_prepared_xacts") == "1"   # never as a side effect

    explicit = Request(Criteria(), Policy(), rollback_prepared=(gid,))
    assert [d.action for d in run_target(spec_for(url), explicit)[0]] == ["would_terminate"]
    assert pri.psql("SELECT count(*) FROM pg_prepared_xacts") == "1"   # the dry run
    done = run_target(spec_for(url), Request(Criteria(), Policy(), execute=True,
                                             rollback_prepared=(gid,)))[0]
    assert [d.action for d in done] == ["terminated"]
    assert pri.psql("SELECT count(*) FROM pg_prepared_xacts") == "0"

    with pri.standby({"hot_standby_feedback": "on"}) as sb:
        sb.wait_for("SELECT pg_is_in_recovery()")
        sb.wait_for("SELECT count(*) > 0 FROM pg_roles WHERE rolname = 'dbw_app'")
        reader = psycopg.connect(sb.url().replace("postgres@", "dbw_app@"), autocommit=True)
        outcome: dict[str, Any] = {}

        def long_query() -> None:
            try:
                reader.execute("SELECT count(*), pg_sleep(30) FROM t")
            except psycopg.errors.QueryCanceled:
                outcome["cancelled"] = True

        th = threading.Thread(target=long_query)
        th.start()
        time.sleep(1.5)
        req = Request(Criteria(older_than=1, match_user=re.compile("^dbw_app$")), Policy(),
                      execute=True)
        (d,), _ = run_target(spec_for(sb.url()), req)
        assert (d.session.pid, d.action) == (reader.info.backend_pid, "cancelled")
        th.join(10)
        assert outcome == {"cancelled": True}
        assert reader.execute("SELECT 1").fetchone() == (1,)   # the session survives
        reader.close()


@needs_pg
def test_pg_daemon_terminates_a_pg201_horizon_holder(pgw: PgWorld) -> None:
    """PG201's evidence identifies the backend (pid + backend_start), so the action can act."""
    holder = pgw.offender(pgw.app, app="analytics-report")
    time.sleep(OLD)
    spec = spec_for(PG, "pg-local")
    [finding], snap = cycle_for(spec, "PG201", {pgw.app})
    assert finding.evidence["backend_start"] and finding.evidence["pid"] == holder.info.backend_pid
    cfg = TerminateConfig(enabled=True, dry_run=False, rules=("PG201",), after=1.0)
    done = DaemonTerminator().run(spec, cfg, [(finding, 1.0)], state_store(), lambda _doc: None,
                                  snap)
    assert [(a.decision["pid"], a.action) for a in done] == [
        (holder.info.backend_pid, "terminated")]
    assert not pgw.alive(holder.info.backend_pid)
