"""QU401/QU402 from live statement sources: a throwaway MariaDB with performance_schema on
(statement history and digests), a throwaway PostgreSQL with pg_stat_statements, and the
shared MariaDB (performance_schema off: no noise, a note on how to enable it)."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbwatch.checks.qu401_qu402_statements import analyse_history
from dbwatch.probes import ProbeStats, run_probes
from dbwatch.targets import open_target, spec_for

sys.path.insert(0, str(Path(__file__).parent))
import mariadb_instance
import pgcluster

pymysql = pytest.importorskip("pymysql")
psycopg = pytest.importorskip("psycopg")

N_JOBS = 12          # digests need at least 10 calls to pair a SELECT with a DELETE
CLAIM = ("select * from {t} where queue = {p} and ((reserved_at is null and available_at <= {p}) "
         "or (reserved_at <= {p})) order by id asc limit 1 for update{skip}")
HISTORY_LONG = 10_000
CONSUMERS = "performance_schema.setup_consumers"


def audit(url: str, *args: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "dbwatch", "audit", url, "--select", "QU4,DW",
                           "--format", "json", *args], check=False, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def of(doc: dict[str, Any], rule: str, table: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["rule"] == rule and f["evidence"].get("table") == table]


def make_jobs(cur: Any, t: str, serial: str, n: int = N_JOBS) -> None:
    cur.execute(f"create table {t} (id bigint primary key {serial}, queue varchar(191) not null, "
                "payload text not null, attempts int not null default 0, reserved_at int null, "
                "available_at int not null, created_at int not null)")
    for _ in range(n):
        cur.execute(f"insert into {t} (queue, payload, available_at, created_at) "
                    "values ('default', '{}', 0, 0)")


def work(conn: Any, t: str, p: str, begin: str | None, fetch: bool, skip: str = "") -> int:
    """Laravel's worker: claim + reserve, commit; then (fetch +) delete, commit."""
    done, now = 0, int(time.time())
    while True:
        with conn.cursor() as cur:
            if begin:
                cur.execute(begin)
            cur.execute(CLAIM.format(t=t, p=p, skip=skip), ("default", now, now - 90))
            row = cur.fetchone()
            if row is None:
                conn.commit()
                return done
            cur.execute(f"update {t} set reserved_at = {p}, attempts = attempts + 1 "
                        f"where id = {p}", (now, row[0]))
            conn.commit()
            if begin:
                cur.execute(begin)
            if fetch:
                cur.execute(f"select * from {t} where id = {p} limit 1 for update", (row[0],))
                cur.fetchall()
            cur.execute(f"delete from {t} where id = {p}", (row[0],))
            conn.commit()
        done += 1


# --- MariaDB with performance_schema ------------------------------------------------------

@pytest.fixture(scope="module")
def pfs() -> Iterator[mariadb_instance.MariaDbInstance]:
    if not mariadb_instance.available():
        pytest.skip("mariadb-install-db / mariadbd not installed")
    db = mariadb_instance.MariaDbInstance.create(
        [*mariadb_instance.PFS_OPTIONS,
         f"--performance-schema-events-statements-history-long-size={HISTORY_LONG}"])
    yield db
    db.destroy()


def reset(db: mariadb_instance.MariaDbInstance) -> None:
    for table in ("events_statements_history_long", "events_statements_summary_by_digest"):
        db.query(f"truncate table performance_schema.{table}")


def run_worker(db: mariadb_instance.MariaDbInstance, begin: str | None, fetch: bool,
               skip: str = "", n: int = N_JOBS) -> str:
    t = f"jobs_{uuid.uuid4().hex[:8]}"
    with db.connect() as admin, admin.cursor() as cur:
        make_jobs(cur, t, "auto_increment", n)
    conn = db.connect(autocommit=begin is not None)   # PyMySQL: SET AUTOCOMMIT = 0 otherwise
    try:
        assert work(conn, t, "%s", begin, fetch, skip) == n
    finally:
        conn.close()
    return t


@pytest.mark.parametrize("begin", ["start transaction", None], ids=["explicit", "autocommit-off"])
def test_history_reports_fetch_before_delete_and_plain_claim(pfs: Any, begin: str | None) -> None:
    reset(pfs)
    t = run_worker(pfs, begin, fetch=True)
    rc, doc = audit(pfs.url())
    assert doc["targets"][0]["unavailable"] == [] and not of(doc, "DW001", t)
    (qu401,) = of(doc, "QU401", t)
    assert qu401["confidence"] == "high" and qu401["severity"] == "warning"
    ev = qu401["evidence"]
    assert ev["count"] == N_JOBS and ev["transactions"] == N_JOBS and ev["key_columns"] == ["id"]
    assert ev["source"] == "performance_schema.events_statements_history_long"
    assert ev["example"]["delete"].startswith(f"delete from {t} where id = ")
    # The digests saw the same pair, as often: added to the history finding, not a second one.
    assert ev["digests"][0]["select_calls"] == N_JOBS == ev["digests"][0]["delete_calls"]
    (qu402,) = of(doc, "QU402", t)
    assert qu402["confidence"] == "high" and qu402["evidence"]["count"] == N_JOBS + 1
    assert "10.11" in qu402["evidence"]["server_version"] and "SKIP LOCKED" in qu402["fix"]
    assert rc == 1


FREEZER = "/**/" * 40 + "(SELECT 1)"  # issue 18: 170 bytes that froze the daemon


def test_the_freezing_statement_in_the_history_is_read_in_time(pfs: Any) -> None:
    """The 170-byte statement that sent a regex into exponential backtracking, run for real
    so it sits in performance_schema's history beside a worker: the audit answers at once
    and still finds the worker's pattern."""
    reset(pfs)
    with pfs.connect() as conn, conn.cursor() as cur:
        for _ in range(50):
            cur.execute(FREEZER)
            try:  # a syntax error is recorded in the history all the same
                cur.execute("/*" + "*/" * 50 + "select 1")
            except pymysql.err.ProgrammingError:
                pass
    t = run_worker(pfs, "start transaction", fetch=True)
    start = time.monotonic()
    _rc, doc = audit(pfs.url())
    took = time.monotonic() - start
    assert took < 30, f"audit took {took:.1f} s"
    (qu401,) = of(doc, "QU401", t)
    assert qu401["evidence"]["count"] == N_JOBS and qu401["evidence"]["not_examined"] == 0
    assert qu401["evidence"]["statements_read"] > 100  # the freezers were read, not skipped


def test_single_delete_with_skip_locked_is_clean(pfs: Any) -> None:
    reset(pfs)
    t = run_worker(pfs, "start transaction", fetch=False, skip=" skip locked")
    rc, doc = audit(pfs.url())
    assert of(doc, "QU401", t) == [] and of(doc, "QU402", t) == []
    assert doc["findings"] == [] and rc == 0 and doc["targets"][0]["rules_run"] == ["QU401", "QU402"]


def test_digests_alone_give_a_probable_qu401(pfs: Any) -> None:
    """History consumers off: the digests still pair the SELECT with the DELETE."""
    reset(pfs)
    pfs.query(f"update {CONSUMERS} set enabled = 'NO' where name like 'events_statements_history%'")
    try:
        t = run_worker(pfs, "start transaction", fetch=True)
        _, doc = audit(pfs.url())
    finally:
        pfs.query(f"update {CONSUMERS} set enabled = 'YES' where name like 'events_statements_%'")
    (note,) = doc["targets"][0]["unavailable"]
    assert "events_statements_history" in note and "SET ENABLED = 'YES'" in note
    assert not [f for f in doc["findings"] if f["rule"] == "DW001"]
    (qu401,) = of(doc, "QU401", t)
    assert qu401["confidence"] == "probable"
    assert qu401["evidence"]["select_calls"] == N_JOBS == qu401["evidence"]["delete_calls"]
    assert f"on `{t}` are called about equally often" in qu401["summary"]
    (qu402,) = of(doc, "QU402", t)     # one statement's shape: a digest shows it fully
    assert qu402["evidence"]["calls"] == N_JOBS + 1 and qu402["confidence"] == "high"


def test_probe_cost_with_a_full_history_long(pfs: Any, capsys: Any) -> None:
    """10,000 statements in history_long: what one probe costs the server, and the check."""
    reset(pfs)
    run_worker(pfs, "start transaction", fetch=True, n=1750)     # ~10,500 statements
    assert pfs.query("select count(*) from performance_schema."
                     "events_statements_history_long")[0][0] == HISTORY_LONG
    conn = open_target(spec_for(pfs.url(), "pfs"))
    try:
        stats = ProbeStats()
        snap = run_probes(conn, "pfs", ["my.statement_history"], stats)
    finally:
        conn.close()
    rows = len(snap.sections.get("my.statement_history").statements)
    ms, sent, examined = pfs.query(
        "select timer_wait / 1e9, rows_sent, rows_examined from performance_schema."
        "events_statements_history_long where sql_text like %s "
        "order by timer_start desc limit 1",
        ("%FROM performance_schema.events_statements_history_long%WHERE SQL_TEXT IS NOT NULL%",))[0]
    t0 = time.perf_counter()
    analysis = analyse_history(snap.sections.get("my.statement_history"))
    check_s = time.perf_counter() - t0
    assert analysis is not None and analysis.statements == rows
    assert 9_900 <= rows <= HISTORY_LONG and sent == rows
    assert float(ms) < 2000 and check_s < 5
    with capsys.disabled():
        print(f"\nmy.statement_history, history_long full: server {float(ms):.1f} ms, "
              f"{sent} rows sent, {examined} examined; probe wall "
              f"{stats.per_probe['my.statement_history'] * 1000:.1f} ms; check "
              f"{check_s * 1000:.1f} ms for {analysis.transactions} transactions")


def test_a_ring_buffer_larger_than_the_limit_yields_the_newest(pfs: Any, monkeypatch: Any) -> None:
    from dbwatch.probes import statements
    reset(pfs)
    run_worker(pfs, "start transaction", fetch=True, n=4)     # 29 statements
    monkeypatch.setattr(statements, "HISTORY_LIMIT", 10)
    conn = open_target(spec_for(pfs.url(), "pfs"))
    try:
        section = run_probes(conn, "pfs", ["my.statement_history"]).sections.get("my.statement_history")
    finally:
        conn.close()
    rows = [[s.thread_id, s.event_id, s.text] for s in section.statements]
    newest = pfs.query("select thread_id, event_id from performance_schema."
                       "events_statements_history_long where sql_text = 'commit' "
                       "order by timer_start desc limit 1")[0]
    assert len(rows) == 10 and [newest[0], newest[1]] in [r[:2] for r in rows]
    assert rows == sorted(rows, key=lambda r: (r[0], r[1]))


# --- the shared MariaDB: performance_schema off by default --------------------------------

def test_shared_mariadb_without_performance_schema_is_quiet(own_my_url: str) -> None:
    my_url = own_my_url  # a schema of its own: others' tables in `test` are not this test's
    rc, doc = audit(my_url)
    target = doc["targets"][0]
    if target["status"] != "ok":
        pytest.skip(f"shared MariaDB not reachable: {target['error']}")
    on = subprocess.run(["mariadb", "-h127.0.0.1", "-uroot", "-Nse", "select @@performance_schema"],
                        check=False, capture_output=True, text=True).stdout.strip()
    if on != "0":
        pytest.skip("the shared MariaDB runs with performance_schema on")
    assert rc == 0 and doc["findings"] == [] and target["rules_unknown"] == {}
    (note,) = target["unavailable"]
    assert "performance_schema is OFF" in note and "`performance_schema = ON`" in note
    table = subprocess.run([sys.executable, "-m", "dbwatch", "audit", my_url, "--select", "QU4"],
                           check=False, capture_output=True, text=True, timeout=60).stdout
    assert "not available: performance_schema is OFF" in table and "DW001" not in table
    explain = subprocess.run([sys.executable, "-m", "dbwatch", "explain", "QU401"],
                             check=False, capture_output=True, text=True, timeout=60).stdout
    assert "performance_schema = ON" in explain
    # explain refills the rule text to the terminal's width: compare modulo line breaks
    assert "SET ENABLED = 'YES' WHERE NAME LIKE 'events_statements_%'" in " ".join(explain.split())


# --- PostgreSQL with pg_stat_statements ----------------------------------------------------

@pytest.fixture(scope="module")
def pgss() -> Iterator[pgcluster.PgCluster]:
    if not pgcluster.available():
        pytest.skip("PostgreSQL server binaries not installed")
    pg = pgcluster.PgCluster.create({"shared_preload_libraries": "'pg_stat_statements'"})
    try:
        pg.psql("create extension pg_stat_statements")
        pg.psql("create database bare")
        yield pg
    finally:
        pg.destroy()


def test_pg_stat_statements_gives_a_probable_qu401(pgss: pgcluster.PgCluster) -> None:
    t = f"jobs_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pgss.url(), autocommit=True) as admin, admin.cursor() as cur:
        make_jobs(cur, t, "generated by default as identity")
    with psycopg.connect(pgss.url()) as conn:
        assert work(conn, t, "%s", None, fetch=True) == N_JOBS
    rc, doc = audit(pgss.url())
    assert doc["targets"][0]["unavailable"] == [] and rc == 1
    (qu401,) = of(doc, "QU401", t)
    assert qu401["confidence"] == "probable" and qu401["evidence"]["scope"] == "postgres"
    assert qu401["evidence"]["select_calls"] == N_JOBS == qu401["evidence"]["delete_calls"]
    assert "$1" in qu401["evidence"]["example"]["select"]
    (qu402,) = of(doc, "QU402", t)
    assert qu402["evidence"]["calls"] == N_JOBS + 1
    assert not [f for f in doc["findings"] if f["rule"] == "DW001"]


def test_pg_without_the_extension_says_how_to_enable_it(pgss: pgcluster.PgCluster) -> None:
    rc, doc = audit(pgss.url("bare"))
    (note,) = doc["targets"][0]["unavailable"]
    assert "pg_stat_statements is not installed in this database" in note
    assert "CREATE EXTENSION pg_stat_statements" in note
    assert rc == 0 and doc["findings"] == []


def test_pg_extension_installed_but_not_preloaded() -> None:
    if not pgcluster.available():
        pytest.skip("PostgreSQL server binaries not installed")
    with pgcluster.PgCluster.create() as pg:
        pg.psql("create extension pg_stat_statements")
        rc, doc = audit(pg.url())
    (note,) = doc["targets"][0]["unavailable"]
    assert "pg_stat_statements is installed but not loaded" in note
    assert "shared_preload_libraries" in note and rc == 0 and doc["findings"] == []
