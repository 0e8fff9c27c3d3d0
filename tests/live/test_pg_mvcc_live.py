"""PG101/PG102/PG201/PG202 against real sessions: the shared server for what it supports, a
throwaway primary (prepared transactions, logical slots) and a hot standby for the rest."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from dbwatch.catalogue import Thresholds, load_catalogue
from dbwatch.config import Config, RuleOverride, TargetConfig
from dbwatch.evaluate import Selection, evaluate, rules_for, sections_needed
from dbwatch.findings import Finding
from dbwatch.probes import run_probes
from dbwatch.targets import open_target, spec_for

sys.path.insert(0, str(Path(__file__).parent))
from pgcluster import PgCluster, available

FAST = Thresholds("duration", 1.0, 3600.0)
CATALOGUE = load_catalogue()


def audit(url: str, rule: str, name: str = "t", config: Config | None = None,
          params: dict[str, Any] | None = None, state: Any = None,
          thresholds: Thresholds | None = FAST) -> list[Finding]:
    over = RuleOverride(thresholds=thresholds if CATALOGUE[rule].thresholds else None,
                        params=params or {})
    cfg = Config(targets=(config.targets if config else ()), rules={rule: over})
    conn = open_target(spec_for(url, name))
    try:
        sel = Selection(select=(rule,))
        snap = run_probes(conn, name, sections_needed(conn.flavour, rules_for(
            conn.flavour, CATALOGUE, cfg, sel)), None, cfg)
    finally:
        conn.close()
    assert not snap.failures, snap.failures
    return [f for f in evaluate(snap, CATALOGUE, cfg, sel, state).findings if f.rule == rule]


def session(url: str, app: str = "dbwatch-test") -> psycopg.Connection[Any]:
    return psycopg.connect(url, autocommit=True, application_name=app)


def churn(url: str, table: str, jobs: int, max_seconds: float = 20.0) -> int:
    """A que_jobs-like worker loop: enqueue one job, claim-and-delete the oldest."""
    n = 0
    with session(url) as w:
        t0 = time.time()
        while n < jobs and time.time() - t0 < max_seconds:
            w.execute(f"INSERT INTO {table} (queue, args) VALUES ('default', '{{}}')")
            w.execute(f"DELETE FROM {table} WHERE job_id = (SELECT job_id FROM {table} "
                      "ORDER BY job_id LIMIT 1 FOR UPDATE SKIP LOCKED)")
            n += 1
    return n


def wait_dead(url: str, table: str, at_least: int, timeout: float = 15.0) -> int:
    with session(url) as c:
        deadline = time.time() + timeout
        while True:
            row = c.execute("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = %s",
                            (table,)).fetchone()
            if row and row[0] >= at_least or time.time() > deadline:
                return int(row[0]) if row else 0
            time.sleep(0.3)


def make_queue(url: str, table: str) -> None:
    with session(url) as c:
        c.execute(f"CREATE TABLE {table} (job_id bigserial PRIMARY KEY, queue text, "
                  "run_at timestamptz DEFAULT now(), args jsonb)")


# ---------------------------------------------------------------- shared server

@pytest.fixture
def queue_table(pg_url: str, uniq: str) -> Iterator[str]:
    name = f"que_jobs_{uniq}"
    make_queue(pg_url, name)
    yield name
    with session(pg_url) as c:
        c.execute(f"DROP TABLE IF EXISTS {name}")


def test_idle_read_committed_writer_pins_by_backend_xid(pg_url: str, queue_table: str) -> None:
    with session(pg_url, "rc-writer") as w:
        w.execute("BEGIN")
        w.execute(f"INSERT INTO {queue_table} (queue) VALUES ('x')")
        time.sleep(1.2)
        found = [f for f in audit(pg_url, "PG201") if f.evidence["pid"] == w.info.backend_pid]
        w.execute("ROLLBACK")
    assert found, "an idle READ COMMITTED writer pins the horizon through backend_xid"
    ev = found[0].evidence
    assert ev["backend_xid"] and ev["backend_xmin"] is None
    assert ev["pins_by"] == "a write (backend_xid)" and ev["state"] == "idle in transaction"


def test_read_only_read_committed_transaction_is_not_a_holder(pg_url: str) -> None:
    with session(pg_url, "rc-reader") as r:
        r.execute("BEGIN")
        r.execute("SELECT count(*) FROM pg_class").fetchone()
        time.sleep(1.2)
        pids = {f.evidence["pid"] for f in audit(pg_url, "PG201",
                                                 params={"xid_warning": 0})}
        r.execute("ROLLBACK")
        assert r.info.backend_pid not in pids


def test_blocking_chain_names_root_and_each_wait(pg_url: str, uniq: str) -> None:
    table = f"jobs_lock_{uniq}"
    with session(pg_url) as admin, session(pg_url, "root-app") as root:
        admin.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, n int)")
        admin.execute(f"INSERT INTO {table} VALUES (1, 0)")
        root.execute("BEGIN")
        root.execute(f"UPDATE {table} SET n = n + 1 WHERE id = 1")
        waiters = [session(pg_url, f"waiter{i}") for i in range(2)]
        first, second = (c.info.backend_pid for c in waiters)
        root_pid = root.info.backend_pid

        def wait(c: psycopg.Connection[Any]) -> None:
            c.execute("SET lock_timeout = '20s'")
            c.execute(f"UPDATE {table} SET n = n + 1 WHERE id = 1")
        threads = []
        for c in waiters:
            threads.append(threading.Thread(target=wait, args=(c,)))
            threads[-1].start()
            time.sleep(0.4)
        time.sleep(1.2)
        try:
            found = [f for f in audit(pg_url, "PG101") if f.evidence["root_pid"] == root_pid]
        finally:
            root.execute("ROLLBACK")
            for t in threads:
                t.join()
            for c in waiters:
                c.close()
            admin.execute(f"DROP TABLE {table}")
    assert len(found) == 1
    ev = found[0].evidence
    assert ev["blocked_count"] == 2 and ev["root_state"] == "idle in transaction"
    assert ev["pid"] == first and ev["age_seconds"] >= 1.0
    chains = {b["pid"]: b["blocked_by"] for b in ev["blocked"]}
    assert chains[first] == root_pid and chains[second] in (first, root_pid)
    assert f"pg_terminate_backend({root_pid})" in found[0].fix


# ---------------------------------------------------------------- throwaway clusters

pytestmark = pytest.mark.skipif(not available(), reason="PostgreSQL binaries not found")


@pytest.fixture(scope="module")
def primary() -> Iterator[PgCluster]:
    pg = PgCluster.create({"wal_level": "logical", "max_prepared_transactions": 5,
                           "max_wal_senders": 5, "max_replication_slots": 5,
                           "autovacuum": "off"})
    yield pg
    pg.destroy()


@pytest.fixture(scope="module")
def standby(primary: PgCluster) -> Iterator[PgCluster]:
    sb = primary.standby({"hot_standby_feedback": "on", "wal_receiver_status_interval": "1s"})
    primary.wait_for("SELECT state = 'streaming' FROM pg_stat_replication")
    yield sb
    sb.destroy()


def burn_xids(url: str, n: int = 20) -> None:
    with session(url) as c:
        for _ in range(n):
            c.execute("SELECT txid_current()")


def test_story_repeatable_read_holder_named_by_pg201_and_pg202(primary: PgCluster,
                                                                uniq: str) -> None:
    """The acceptance story, through the CLI, on a server no other session disturbs (on the
    shared server an older holder from elsewhere would rightly be named instead)."""
    pg_url, queue_table = primary.url(), f"que_jobs_{uniq}"
    make_queue(pg_url, queue_table)
    holder = session(pg_url, f"nightly-analytics-{uniq}")
    holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    holder.execute("SELECT count(*) FROM pg_class").fetchone()
    pid = holder.info.backend_pid
    try:
        time.sleep(2.0)     # "long": older than PG201's cause_min_age (2s)
        churn(pg_url, queue_table, 1200)
        assert wait_dead(pg_url, queue_table, 1000) >= 1000
        out = subprocess.run([sys.executable, "-m", "dbwatch", "audit", pg_url, "--format",
                              "json", "--select", "PG2"], capture_output=True, text=True,
                             timeout=60, check=False)
        doc = json.loads(out.stdout)
    finally:
        holder.close()
        with session(pg_url) as c:
            c.execute(f"DROP TABLE {queue_table}")
    pg201 = [f for f in doc["findings"] if f["rule"] == "PG201" and f["evidence"]["pid"] == pid]
    assert pg201, doc["findings"]
    assert pg201[0]["evidence"]["application"] == f"nightly-analytics-{uniq}"
    assert pg201[0]["evidence"]["pins_by"] == "a snapshot (backend_xmin)"
    assert f"pg_terminate_backend({pid})" in pg201[0]["fix"]
    pg202 = [f for f in doc["findings"] if f["rule"] == "PG202"
             and f["evidence"]["table"].endswith(queue_table)]
    assert pg202, doc["findings"]
    ev = pg202[0]["evidence"]
    assert ev["holder_pid"] == pid and ev["queue_table"] and ev["dead"] >= 1000
    assert f"pid {pid}" in pg202[0]["summary"]


def test_prepared_transaction_holder(primary: PgCluster, uniq: str) -> None:
    gid = f"dbw-{uniq}"
    with session(primary.url()) as c:
        c.execute("CREATE TABLE IF NOT EXISTS t2pc (n int)")
        c.execute("BEGIN")
        c.execute("INSERT INTO t2pc VALUES (1)")
        c.execute(f"PREPARE TRANSACTION '{gid}'")
        try:
            time.sleep(1.1)
            burn_xids(primary.url(), 5)
            found = [f for f in audit(primary.url(), "PG201") if f.evidence["kind"] == "prepared"]
        finally:
            c.execute(f"ROLLBACK PREPARED '{gid}'")
    assert len(found) == 1
    f = found[0]
    assert f.evidence["gid"] == gid and f.evidence["pins"] == "database postgres"
    assert f.evidence["scope"] == "database" and f.evidence["database"] == "postgres"
    assert f.evidence["age_seconds"] >= 1.0 and f.evidence["xid_age"] >= 5
    assert f"ROLLBACK PREPARED '{gid}'" in f.fix and "database postgres" in f.fix


def test_logical_slot_holds_catalogs_graded_by_xid_age(primary: PgCluster) -> None:
    with session(primary.url()) as c:
        c.execute("SELECT pg_create_logical_replication_slot('dbw_logical', 'test_decoding')")
        try:
            burn_xids(primary.url(), 30)
            found = [f for f in audit(primary.url(), "PG201", params={"xid_warning": 20})
                     if f.evidence["kind"] == "slot"]
            quiet = [f for f in audit(primary.url(), "PG201") if f.evidence["kind"] == "slot"]
        finally:
            c.execute("SELECT pg_drop_replication_slot('dbw_logical')")
    assert len(found) == 1 and not quiet
    ev = found[0].evidence
    assert ev["pins"] == "catalogs (all databases)" and ev["scope"] == "cluster" and ev["slot"] == "dbw_logical"
    assert ev["age_seconds"] is None and ev["xid_age"] >= 30 and found[0].severity == "warning"
    assert "pg_drop_replication_slot('dbw_logical')" in found[0].fix


def test_dead_tuples_in_a_configured_database_vacuum_confirms_holder(primary: PgCluster) -> None:
    with session(primary.url()) as c:
        c.execute("CREATE DATABASE queue2")
    url2 = primary.url("queue2")
    make_queue(url2, "good_jobs")
    holder = session(url2, "analytics-q2")
    pid = holder.info.backend_pid
    holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    holder.execute("SELECT 1").fetchone()
    try:
        churn(url2, "good_jobs", 1200)
        with session(url2) as v:
            v.execute("VACUUM good_jobs")
        assert wait_dead(url2, "good_jobs", 1000) >= 1000
        cfg = Config(targets=(TargetConfig("p", primary.url(), databases=("queue2",)),))
        found = audit(primary.url(), "PG202", name="p", config=cfg, thresholds=None)
        unconfigured = [f for f in audit(primary.url(), "PG202", name="p", thresholds=None)
                        if "good_jobs" in f.subject]
    finally:
        holder.close()
        with session(primary.url()) as c:
            c.execute("DROP DATABASE queue2")
    assert not unconfigured
    assert len(found) == 1 and found[0].evidence["table"] == "queue2.public.good_jobs"
    assert found[0].evidence["holder_pid"] == pid
    assert found[0].confidence == "high" and "vacuumed" in found[0].evidence["cause"]


def _deadlock(url: str) -> None:
    with session(url) as c:
        c.execute("CREATE TABLE IF NOT EXISTS dl (id int PRIMARY KEY, n int)")
        c.execute("INSERT INTO dl VALUES (1, 0), (2, 0) ON CONFLICT DO NOTHING")
    a, b = session(url), session(url)
    for c, row in ((a, 1), (b, 2)):
        c.execute("BEGIN")
        c.execute("UPDATE dl SET n = n + 1 WHERE id = %s", (row,))
    errors: list[Exception] = []

    def cross(c: psycopg.Connection[Any], row: int) -> None:
        try:
            c.execute("UPDATE dl SET n = n + 1 WHERE id = %s", (row,))
        except psycopg.errors.DeadlockDetected as exc:
            errors.append(exc)
        finally:
            c.execute("ROLLBACK")
    ts = [threading.Thread(target=cross, args=(a, 2)), threading.Thread(target=cross, args=(b, 1))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    a.close()
    b.close()
    assert len(errors) == 1


class History:
    """The daemon state's duck-typed history interface (dbwatch/state.py provides the real one)."""

    def __init__(self, points: dict[str, list[tuple[float, float]]]) -> None:
        self.points = points

    def history(self, target: str, key: str, since_seconds: float) -> list[tuple[float, float]]:
        return self.points.get(key, [])


def test_deadlock_counter_one_shot_and_increase(primary: PgCluster) -> None:
    _deadlock(primary.url())
    deadline = time.time() + 15
    while not (found := audit(primary.url(), "PG102")) and time.time() < deadline:
        time.sleep(0.5)
    assert len(found) == 1 and found[0].evidence["database"] == "postgres"
    count = found[0].evidence["count"]
    assert count >= 1 and "never reset" in found[0].summary and found[0].evidence["one_shot"]
    first_look = audit(primary.url(), "PG102", state=History({}))
    seen = History({"pg.deadlocks:postgres": [(time.time() - 60, float(count - 1))]})
    increase = audit(primary.url(), "PG102", state=seen)
    unchanged = audit(primary.url(), "PG102", state=History(
        {"pg.deadlocks:postgres": [(time.time() - 60, float(count))]}))
    assert not first_look and not unchanged
    assert increase[0].evidence["count"] == 1 and "since the last look" in increase[0].summary


def _standby_holder(sb: PgCluster, app: str) -> psycopg.Connection[Any]:
    c = session(sb.url(), app)
    c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    c.execute("SELECT count(*) FROM pg_class").fetchone()
    return c


def _pair(primary: PgCluster, sb: PgCluster) -> Config:
    return Config(targets=(TargetConfig("db1", primary.url()),
                           TargetConfig("replica-1", sb.url(), primary="db1")))


def test_standby_query_holds_primary_horizon(primary: PgCluster, standby: PgCluster) -> None:
    q = _standby_holder(standby, "analytics")
    pid = q.info.backend_pid
    try:
        burn_xids(primary.url(), 30)
        primary.wait_for("SELECT age(backend_xmin) >= 30 FROM pg_stat_replication")
        time.sleep(1.1)
        cfg = _pair(primary, standby)
        on_primary = [f for f in audit(primary.url(), "PG201", "db1", cfg,
                                       params={"xid_warning": 20})
                      if f.evidence["kind"] == "standby_feedback"]
        plain = [f for f in audit(primary.url(), "PG201", params={"xid_warning": 20})
                 if f.evidence["kind"] == "standby_feedback"]
        on_standby = audit(standby.url(), "PG201", "replica-1", cfg)
    finally:
        q.close()
    assert len(on_primary) == 1 and len(plain) == 1
    f = on_primary[0]
    assert f.evidence["pins"] == "all databases" and f.evidence["slot"] is None
    assert f.evidence["scope"] == "cluster"
    assert f"the analytics query pid {pid} on replica-1 holds the primary's horizon" in f.summary
    assert f"on replica-1: SELECT pg_terminate_backend({pid})" in f.fix
    assert "standby walreceiver" in plain[0].summary and "pg_cancel_backend" in plain[0].fix
    mine = [f for f in on_standby if f.evidence["pid"] == pid]
    assert len(mine) == 1 and mine[0].evidence["kind"] == "standby_query"
    assert "holds the primary's horizon" in mine[0].summary
    rep = mine[0].evidence["primary_replication"]
    assert rep["application"] == "walreceiver" and rep["client_addr"] == "127.0.0.1"


def test_physical_slot_feedback_then_inactive_slot_keeps_xmin(primary: PgCluster,
                                                              standby: PgCluster) -> None:
    primary.psql("SELECT pg_create_physical_replication_slot('dbw_phys')")
    try:
        standby.configure({"primary_slot_name": "'dbw_phys'"})
        standby.psql("SELECT pg_reload_conf()")
        q = _standby_holder(standby, "analytics")
        burn_xids(primary.url(), 30)
        primary.wait_for("SELECT active AND age(xmin) >= 30 FROM pg_replication_slots "
                         "WHERE slot_name = 'dbw_phys'")
        active = [f for f in audit(primary.url(), "PG201", params={"xid_warning": 20})
                  if f.evidence.get("slot") == "dbw_phys"]
        q.close()
        standby.stop()
        inactive = [f for f in audit(primary.url(), "PG201", params={"xid_warning": 20})
                    if f.evidence.get("slot") == "dbw_phys"]
    finally:
        standby.stop("immediate")
        primary.psql("SELECT pg_drop_replication_slot('dbw_phys')")
    assert len(active) == 1 and active[0].evidence["kind"] == "standby_feedback"
    assert "through hot_standby_feedback on slot dbw_phys" in active[0].summary
    assert len(inactive) == 1 and inactive[0].evidence["kind"] == "slot"
    assert inactive[0].evidence["active"] is False and inactive[0].evidence["pins"] == "all databases"
    assert inactive[0].evidence["scope"] == "cluster"
    assert "pg_drop_replication_slot('dbw_phys')" in inactive[0].fix
