"""QU001–QU004 on the real local MariaDB and PostgreSQL: Laravel-shaped tables (plain and
prefixed), Que and GoodJob shapes, an empty healthy queue, privileges, and a big table.
Each test works in its own throwaway database, dropped at teardown.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pymysql
import pytest

from dbwatch.probes.queue import WINDOW, collect
from dbwatch.targets import open_target, spec_for

JOB = "App\\Jobs\\SendInvoice"
MY_DDL = [
    ("CREATE TABLE `{p}jobs` (`id` bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,"
    " `queue` varchar(255) NOT NULL, `payload` longtext NOT NULL, `attempts` tinyint unsigned NOT NULL,"
    " `reserved_at` int unsigned NULL, `available_at` int unsigned NOT NULL,"
    " `created_at` int unsigned NOT NULL, KEY `{p}jobs_queue_index` (`queue`))"
    " DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"),
    ("CREATE TABLE `{p}failed_jobs` (`id` bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,"
    " `uuid` varchar(255) NOT NULL, `connection` text NOT NULL, `queue` text NOT NULL,"
    " `payload` longtext NOT NULL, `exception` longtext NOT NULL,"
    " `failed_at` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,"
    " UNIQUE KEY `{p}failed_jobs_uuid_unique` (`uuid`)) DEFAULT CHARACTER SET utf8mb4"),
]
PG_DDL = [
    ('CREATE TABLE "{p}jobs" ("id" bigserial PRIMARY KEY NOT NULL, "queue" varchar(255) NOT NULL,'
    ' "payload" text NOT NULL, "attempts" smallint NOT NULL, "reserved_at" integer NULL,'
    ' "available_at" integer NOT NULL, "created_at" integer NOT NULL)'),
    'CREATE INDEX "{p}jobs_queue_index" ON "{p}jobs" ("queue")',
    ('CREATE TABLE "{p}failed_jobs" ("id" bigserial PRIMARY KEY NOT NULL, "uuid" varchar(255) NOT NULL,'
    ' "connection" text NOT NULL, "queue" text NOT NULL, "payload" text NOT NULL,'
    ' "exception" text NOT NULL,'
    ' "failed_at" timestamp(0) without time zone DEFAULT CURRENT_TIMESTAMP NOT NULL)'),
    'ALTER TABLE "{p}failed_jobs" ADD CONSTRAINT "{p}failed_jobs_uuid_unique" UNIQUE ("uuid")',
]


def payload(cls: str, timeout: int | None = None) -> str:
    """A Laravel 8-style payload (json_encode: escaped backslashes, no spaces)."""
    return json.dumps({"uuid": "0b5c", "displayName": cls,
                       "job": "Illuminate\\Queue\\CallQueuedHandler@call", "maxTries": None,
                       "maxExceptions": None, "failOnTimeout": False, "backoff": None,
                       "timeout": timeout, "retryUntil": None,
                       "data": {"commandName": cls, "command": 'O:8:"stdClass":0:{}'}},
                      separators=(",", ":"))


MAX_57 = (f"Illuminate\\Queue\\MaxAttemptsExceededException: {JOB} has been attempted too many "
          "times or run too long. The job may have previously timed out. in "
          "/app/vendor/laravel/framework/src/Illuminate/Queue/Worker.php:750\nStack trace:\n#0 {main}")
TIMEOUT = ("Illuminate\\Queue\\TimeoutExceededException: App\\Jobs\\Export has timed out. in "
           "/app/vendor/laravel/framework/src/Illuminate/Queue/TimeoutExceededException.php:15")
DEADLOCK = ("Illuminate\\Database\\QueryException: SQLSTATE[40001]: Serialization failure: 1213 "
            "Deadlock found when trying to get lock; try restarting transaction (Connection: mysql,"
            " SQL: delete from `jobs` where `id` = 77) in /app/vendor/x.php:760")


def fill_laravel(run: Any, engine: str, p: str) -> None:
    """Backlog 2 h old, 5 jobs reserved 1 h ago with attempts 3, 40 + 5 + 2 failures."""
    now = "UNIX_TIMESTAMP()" if engine == "mysql" else "extract(epoch FROM now())::int"
    seq = "seq_1_to_{n}" if engine == "mysql" else "generate_series(1, {n})"
    run(f"INSERT INTO {p}jobs (queue, payload, attempts, reserved_at, available_at, created_at)"
        f" SELECT 'default', %s, 0, NULL, {now} - 7200, {now} - 7200 FROM {seq.format(n=30)}",
        (payload("App\\Jobs\\Welcome"),))
    run(f"INSERT INTO {p}jobs (queue, payload, attempts, reserved_at, available_at, created_at)"
        f" SELECT 'invoices', %s, 3, {now} - 3600, {now} - 7200, {now} - 7200 FROM {seq.format(n=5)}",
        (payload(JOB, timeout=120),))
    uid = "UUID()" if engine == "mysql" else "gen_random_uuid()::text"
    for n, exc, cls in ((40, MAX_57, JOB), (5, TIMEOUT, "App\\Jobs\\Export"),
                        (2, DEADLOCK, "App\\Jobs\\Welcome")):
        run(f"INSERT INTO {p}failed_jobs (uuid, connection, queue, payload, exception)"
            f" SELECT {uid}, 'database', 'invoices', %s, %s FROM {seq.format(n=n)}",
            (payload(cls), exc))
    # an old failure, outside the 24 h window: must not be counted
    old = "NOW() - INTERVAL 3 DAY" if engine == "mysql" else "localtimestamp - interval '3 days'"
    run(f"INSERT INTO {p}failed_jobs (uuid, connection, queue, payload, exception, failed_at)"
        f" VALUES ({uid}, 'database', 'invoices', %s, %s, {old})", (payload(JOB), MAX_57))


@pytest.fixture
def my_db(uniq: str) -> Iterator[tuple[str, Any]]:
    admin = pymysql.connect(host="127.0.0.1", port=3306, user="root", password="", autocommit=True)
    db = f"dbwq_{uniq}"
    admin.cursor().execute(f"CREATE DATABASE {db}")
    admin.select_db(db)
    yield f"mysql://root@127.0.0.1:3306/{db}", admin
    admin.cursor().execute(f"DROP DATABASE {db}")
    admin.close()


@pytest.fixture
def pg_db(uniq: str) -> Iterator[tuple[str, Any]]:
    admin = psycopg.connect("postgresql://postgres@127.0.0.1:5432/test", autocommit=True)
    db = f"dbwq_{uniq}"
    for attempt in range(5):      # other tests may be copying template1 at the same moment
        try:
            admin.execute(f"CREATE DATABASE {db}")
            break
        except psycopg.errors.ObjectInUse:
            time.sleep(0.5 * (attempt + 1))
    conn = psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{db}", autocommit=True)
    yield f"postgresql://postgres@127.0.0.1:5432/{db}", conn
    conn.close()
    admin.execute(f"DROP DATABASE {db} WITH (FORCE)")
    admin.close()


def my_run(conn: Any) -> Any:
    def run(stmt: str, params: Any = None) -> None:
        conn.cursor().execute(stmt, params)
    return run


def pg_run(conn: Any) -> Any:
    def run(stmt: str, params: Any = None) -> None:
        conn.execute(stmt, params)
    return run


def audit(url: str, *extra: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "dbwatch", "audit", url, "--select", "QU0,DW",
                          "--format", "json", *extra], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode in (0, 1, 2, 3), out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def by_rule(data: dict[str, Any], table: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for f in data["findings"]:
        if f["evidence"].get("table") == table:
            out.setdefault(f["rule"], []).append(f)
    return out


def assert_laravel(data: dict[str, Any], schema: str, p: str) -> None:
    jobs = by_rule(data, f"{schema}.{p}jobs")
    failed = by_rule(data, f"{schema}.{p}failed_jobs")
    backlog = [f for f in jobs["QU001"] if f["evidence"]["queue"] == "default"]
    assert len(backlog) == 1 and backlog[0]["severity"] == "critical"
    assert backlog[0]["evidence"]["depth"] == 30
    assert 7190 <= backlog[0]["evidence"]["age_seconds"] <= 7300
    (expired,) = jobs["QU002"]
    assert expired["evidence"]["count"] == 5 and expired["evidence"]["queues"] == {"invoices": 5}
    assert 3590 <= expired["evidence"]["oldest_seconds"] <= 3700
    assert expired["evidence"]["retry_after_seconds"] == 90
    (repeated,) = jobs["QU003"]
    ev = repeated["evidence"]
    assert ev["count"] == 5 and ev["max_attempts"] == 3
    assert ev["by_class"][0]["job_class"] == JOB and ev["by_class"][0]["share"] == 1.0
    assert ev["timeout_not_below_retry_after"][0]["timeout"] == 120
    groups = {(f["evidence"]["kind"], f["evidence"]["job_class"]): f for f in failed["QU004"]}
    maxed = groups[("max_attempts", JOB)]
    assert maxed["evidence"]["count"] == 40          # the 3-day-old one is outside the window
    assert maxed["evidence"]["variants"] == ["5.5-10.9"]
    assert "MaxAttemptsExceededException" in maxed["summary"]
    assert groups[("timeout", "App\\Jobs\\Export")]["evidence"]["count"] == 5
    assert groups[("deadlock", "App\\Jobs\\Welcome")]["evidence"]["count"] == 2
    assert len(groups) == 3


@pytest.mark.parametrize("prefix", ["", "app1_"])
def test_laravel_mariadb(my_db: tuple[str, Any], prefix: str) -> None:
    url, conn = my_db
    run = my_run(conn)
    for stmt in MY_DDL:
        run(stmt.format(p=prefix))
    fill_laravel(run, "mysql", prefix)
    data = audit(url)
    assert data["targets"][0]["rules_unknown"] == {}
    assert_laravel(data, url.rsplit("/", 1)[1], prefix)


@pytest.mark.parametrize("prefix", ["", "app1_"])
def test_laravel_postgresql(pg_db: tuple[str, Any], prefix: str) -> None:
    url, conn = pg_db
    run = pg_run(conn)
    if prefix:          # the prefixed app lives in its own schema as well
        run("CREATE SCHEMA app1")
        run("SET search_path = app1")
    for stmt in PG_DDL:
        run(stmt.format(p=prefix))
    fill_laravel(run, "postgresql", prefix)
    data = audit(url)
    assert data["targets"][0]["rules_unknown"] == {}
    assert_laravel(data, "app1" if prefix else "public", prefix)


def test_target_retry_after_from_config(my_db: tuple[str, Any], tmp_path: Path) -> None:
    """A per-target retry_after of 2h: jobs reserved 1h ago are not expired."""
    url, conn = my_db
    for stmt in MY_DDL:
        my_run(conn)(stmt.format(p=""))
    fill_laravel(my_run(conn), "mysql", "")
    cfg = tmp_path / "dbwatch.toml"
    cfg.write_text(f'[[targets]]\nname = "q"\nurl = "{url}"\nretry_after = "2h"\n')
    data = audit("q", "--config", str(cfg))
    rules = by_rule(data, url.rsplit("/", 1)[1] + ".jobs")
    assert "QU002" not in rules and "QU001" in rules


QUE_DDL = """
CREATE TABLE que_jobs (priority smallint DEFAULT 100 NOT NULL, run_at timestamptz DEFAULT now() NOT NULL,
  id bigserial PRIMARY KEY, job_class text NOT NULL, error_count integer DEFAULT 0 NOT NULL,
  last_error_message text, queue text DEFAULT 'default' NOT NULL, last_error_backtrace text,
  finished_at timestamptz, expired_at timestamptz, args jsonb DEFAULT '[]' NOT NULL,
  data jsonb DEFAULT '{}' NOT NULL, job_schema_version integer NOT NULL DEFAULT 1)"""
GOOD_JOB_DDL = """
CREATE TABLE good_jobs (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), queue_name text,
  priority integer, serialized_params jsonb, scheduled_at timestamp, performed_at timestamp,
  finished_at timestamp, error text, created_at timestamp NOT NULL, updated_at timestamp NOT NULL,
  active_job_id uuid, concurrency_key text, cron_key text, retried_good_job_id uuid,
  cron_at timestamp, executions_count integer, job_class text, error_event smallint,
  locked_by_id uuid, locked_at timestamp)"""


def test_que_and_good_job_postgresql(pg_db: tuple[str, Any]) -> None:
    url, conn = pg_db
    run = pg_run(conn)
    run(QUE_DDL)
    run("INSERT INTO que_jobs (run_at, job_class) SELECT now() - interval '2 hours', 'SendMail'"
        " FROM generate_series(1, 12)")
    run("INSERT INTO que_jobs (run_at, job_class, error_count, last_error_message, args)"
        " SELECT now() + interval '5 minutes', 'ActiveJob::QueueAdapters::QueAdapter::JobWrapper',"
        " 2, 'RuntimeError: boom', '[{\"job_class\": \"ChargeCard\"}]' FROM generate_series(1, 4)")
    run("INSERT INTO que_jobs (job_class, error_count, last_error_message, expired_at)"
        " SELECT 'SendMail', 16, 'Net::ReadTimeout: Net::ReadTimeout', now() - interval '1 hour'"
        " FROM generate_series(1, 7)")
    run(GOOD_JOB_DDL)
    run("CREATE INDEX ON good_jobs (scheduled_at) WHERE finished_at IS NULL")
    utc = "(now() AT TIME ZONE 'UTC')"
    run(f"INSERT INTO good_jobs (queue_name, serialized_params, scheduled_at, created_at, updated_at,"
        f" executions_count) SELECT 'mailers', '{{\"job_class\": \"WelcomeMailer\"}}',"
        f" {utc} - interval '2 hours', {utc} - interval '2 hours', now(), 0 FROM generate_series(1, 20)")
    run(f"INSERT INTO good_jobs (queue_name, serialized_params, scheduled_at, created_at, updated_at,"
        f" executions_count, error) SELECT 'default', '{{\"job_class\": \"SyncJob\"}}',"
        f" {utc} + interval '1 hour', now(), now(), 3, 'Faraday::TimeoutError: timeout'"
        f" FROM generate_series(1, 6)")
    run(f"INSERT INTO good_jobs (queue_name, serialized_params, scheduled_at, created_at, updated_at,"
        f" executions_count, error, finished_at) SELECT 'default', '{{\"job_class\": \"SyncJob\"}}',"
        f" now(), now(), now(), 5, 'Faraday::TimeoutError: timeout', {utc} - interval '10 minutes'"
        f" FROM generate_series(1, 9)")
    data = audit(url)
    que, good = by_rule(data, "public.que_jobs"), by_rule(data, "public.good_jobs")
    (backlog,) = que["QU001"]
    assert backlog["evidence"]["depth"] == 12 and backlog["evidence"]["library"] == "que"
    (rep,) = que["QU003"]
    assert rep["evidence"]["by_class"][0]["job_class"] == "ChargeCard"
    assert rep["evidence"]["count"] == 4 and rep["evidence"]["max_attempts"] == 3
    (failed,) = que["QU004"]
    assert failed["evidence"]["count"] == 7 and failed["evidence"]["exception"] == "Net::ReadTimeout"
    assert "QU002" not in que        # Que holds advisory locks: no reservations to expire
    (gb,) = good["QU001"]
    assert gb["evidence"]["depth"] == 20 and gb["evidence"]["queue"] == "mailers"
    assert good["QU003"][0]["evidence"]["by_class"][0]["job_class"] == "SyncJob"
    (gf,) = good["QU004"]
    assert gf["evidence"]["count"] == 9 and gf["evidence"]["exception"] == "Faraday::TimeoutError"


def test_empty_healthy_queue(my_db: tuple[str, Any], pg_db: tuple[str, Any]) -> None:
    """Empty tables and fresh jobs (available now, never retried): no QU finding."""
    for url, ddl, run, engine in ((my_db[0], MY_DDL, my_run(my_db[1]), "mysql"),
                                  (pg_db[0], PG_DDL, pg_run(pg_db[1]), "pg")):
        for stmt in ddl:
            run(stmt.format(p=""))
        now = "UNIX_TIMESTAMP()" if engine == "mysql" else "extract(epoch FROM now())::int"
        run(f"INSERT INTO jobs (queue, payload, attempts, available_at, created_at)"
            f" VALUES ('default', %s, 0, {now}, {now})", (payload("App\\Jobs\\Ping"),))
        data = audit(url)
        schema = url.rsplit("/", 1)[1] if engine == "mysql" else "public"
        assert by_rule(data, f"{schema}.jobs") == {} and by_rule(data, f"{schema}.failed_jobs") == {}
        assert data["targets"][0]["rules_unknown"] == {}


def test_select_refused_is_dw001(my_db: tuple[str, Any], uniq: str) -> None:
    """A monitor that sees the table but may not SELECT it: DW001 naming the grant."""
    url, conn = my_db
    run = my_run(conn)
    for stmt in MY_DDL:
        run(stmt.format(p=""))
    db, user = url.rsplit("/", 1)[1], f"dbwq_{uniq}"
    # a password sharing no 4-character piece with the hex names (dbwatch masks such pieces)
    pw = "Kq-" + uniq.translate(str.maketrans("0123456789abcdef", "ghijklmnopqrstuv"))
    run(f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY '{pw}'")
    try:
        run(f"GRANT INSERT ON {db}.jobs TO '{user}'@'127.0.0.1'")
        data = audit(f"mysql://{user}:{pw}@127.0.0.1:3306/{db}")
        dw = [f for f in data["findings"] if f["rule"] == "DW001"]
        assert any(f"GRANT SELECT ON `{db}`.`jobs`" in f["fix"]
                   or f"GRANT SELECT ON {db}.jobs" in f["fix"] for f in dw), dw
        assert pw not in json.dumps(data)
    finally:
        run(f"DROP USER '{user}'@'127.0.0.1'")


BIG_MY = ("INSERT INTO jobs (queue, payload, attempts, reserved_at, available_at, created_at)"
          " WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < %s)"
          " SELECT IF(n %% 10 = 0, 'low', 'default'), %s, IF(n %% 1000 = 0, 2, 0),"
          " IF(n %% 5000 = 0, UNIX_TIMESTAMP() - 600, NULL), UNIX_TIMESTAMP() - 3600 + n %% 3000,"
          " UNIX_TIMESTAMP() - 3600 FROM s")


def test_big_jobs_table_is_bounded(my_db: tuple[str, Any]) -> None:
    """250k jobs: the window caps the scan, depth becomes an estimate, and it stays bounded."""
    url, conn = my_db
    run = my_run(conn)
    for stmt in MY_DDL:
        run(stmt.format(p=""))
    run("SET SESSION max_recursive_iterations = 1000000")   # MariaDB's default is 1000
    run(BIG_MY, (250_000, payload("App\\Jobs\\Bulk")))
    run("ANALYZE TABLE jobs")
    target = open_target(spec_for(url))
    try:
        t0 = time.perf_counter()
        data = collect(target)
        seconds = time.perf_counter() - t0
        data = getattr(data, "data", data)      # a PartialResult if another table failed
    finally:
        target.close()
    (jobs,) = [t for t in data["tables"] if t["table"] == "jobs"
               and t["schema"] == url.rsplit("/", 1)[1]]
    assert "summary" in jobs, jobs["error"]
    assert sum(r["total"] for r in jobs["summary"]) == jobs["window"] == WINDOW
    assert jobs["error"] is None and seconds < 10, seconds   # each query also has the 5 s timeout
    result = audit(url)
    (default,) = [f for f in by_rule(result, url.rsplit("/", 1)[1] + ".jobs")["QU001"]
                  if f["evidence"]["queue"] == "default"]
    assert default["evidence"]["window_capped"] and default["evidence"]["depth_is_estimate"]
    assert 150_000 <= default["evidence"]["depth"] <= 300_000


# --- Solid Queue, graphile-worker, pg-boss, Laravel job_batches -------------------------------
# Solid Queue's tables as its install generator's db/queue_schema.rb defines them (the tables
# dbwatch reads), turned into each engine's DDL the way Rails does: string -> varchar(255),
# datetime -> datetime(6) / timestamp(6), bigint primary keys.
SQ_TABLES = {
    "jobs": "queue_name s!, class_name s!, arguments t, priority i!0, active_job_id s,"
            " scheduled_at d, finished_at d, concurrency_key s, created_at d!, updated_at d!",
    "ready_executions": "job_id b!, queue_name s!, priority i!0, created_at d!",
    "scheduled_executions": "job_id b!, queue_name s!, priority i!0, scheduled_at d!, created_at d!",
    "claimed_executions": "job_id b!, process_id b, created_at d!",
    "failed_executions": "job_id b!, error t, created_at d!",
    "processes": "kind s!, last_heartbeat_at d!, supervisor_id b, pid i!, hostname s, metadata t,"
                 " created_at d!, name s!",
}
SQ_INDEXES = [("jobs", "queue_name, finished_at"), ("jobs", "scheduled_at, finished_at"),
              ("ready_executions", "queue_name, priority, job_id"),
              ("scheduled_executions", "scheduled_at, priority, job_id"),
              ("claimed_executions", "process_id, job_id")]


def solid_queue_ddl(engine: str) -> list[str]:
    types = {"s": "varchar(255)", "t": "text", "i": "integer", "b": "bigint",
             "d": "datetime(6)" if engine == "mysql" else "timestamp(6) without time zone"}
    pk = ("bigint NOT NULL AUTO_INCREMENT PRIMARY KEY" if engine == "mysql"
          else "bigserial PRIMARY KEY")
    out = []
    for name, spec in SQ_TABLES.items():
        cols = [f"id {pk}"]
        for col in spec.split(","):
            cname, code = col.split()
            ctype = types[code[0]] + (" NOT NULL" if "!" in code else "")
            ctype += " DEFAULT 0" if code.endswith("0") else ""
            cols.append(f"{cname} {ctype}")
        out.append(f"CREATE TABLE solid_queue_{name} ({', '.join(cols)})")
    for i, (name, cols) in enumerate(SQ_INDEXES):
        out.append(f"CREATE INDEX sq_idx_{i} ON solid_queue_{name} ({cols})")
    for name in ("ready_executions", "scheduled_executions", "claimed_executions",
                 "failed_executions"):
        out.append(f"ALTER TABLE solid_queue_{name} ADD FOREIGN KEY (job_id)"
                   " REFERENCES solid_queue_jobs (id) ON DELETE CASCADE")
    return out


def active_job(cls: str, queue: str, executions: int) -> str:
    """Active Job's serialized form, as Solid Queue stores it in solid_queue_jobs.arguments."""
    return json.dumps({"job_class": cls, "job_id": "6d1c7c43", "provider_job_id": None,
                       "queue_name": queue, "priority": None, "arguments": [42],
                       "executions": executions, "exception_executions": {
                           "[Net::ReadTimeout]": executions} if executions else {},
                       "locale": "en", "timezone": "UTC",
                       "enqueued_at": "2025-01-01T00:00:00.000000000Z", "scheduled_at": None},
                      separators=(",", ":"))


def sq_error(cls: str, message: str) -> str:
    return json.dumps({"exception_class": cls, "message": message,
                       "backtrace": ["app/jobs/x.rb:3:in `perform'"]}, separators=(",", ":"))


PRUNED = "Process was found dead and pruned (last heartbeat at: 2025-01-01 00:00:00 UTC)"


def fill_solid_queue(run: Any, engine: str, healthy: bool = False) -> None:
    """Ready backlog 2 h old, due scheduled jobs, retried jobs, a dead worker's claims, failures."""
    now = "UTC_TIMESTAMP(6)" if engine == "mysql" else "(now() AT TIME ZONE 'UTC')"
    ago = ((lambda s: f"{now} - INTERVAL {s} SECOND") if engine == "mysql"
           else (lambda s: f"{now} - interval '{s} seconds'"))
    seq = "seq_1_to_{n}" if engine == "mysql" else "generate_series(1, {n})"

    def jobs(n: int, cls: str, queue: str, executions: int, at: str) -> None:
        run(f"INSERT INTO solid_queue_jobs (queue_name, class_name, arguments, active_job_id,"
            f" created_at, updated_at) SELECT %s, %s, %s, 'x', {at}, {at} FROM {seq.format(n=n)}",
            (queue, cls, active_job(cls, queue, executions)))

    def execs(table: str, cols: str, values: str, cls: str) -> None:
        run(f"INSERT INTO solid_queue_{table} (job_id, {cols}) SELECT id, {values}"
            f" FROM solid_queue_jobs WHERE class_name = %s", (cls,))

    run(f"INSERT INTO solid_queue_processes (kind, last_heartbeat_at, pid, created_at, name)"
        f" VALUES ('Worker', {now}, 101, {now}, 'worker-live'),"
        f" ('Worker', {ago(3600)}, 102, {ago(7200)}, 'worker-dead')")
    if healthy:
        jobs(1, "PingJob", "default", 0, now)
        execs("ready_executions", "queue_name, created_at", f"queue_name, {now}", "PingJob")
        return
    jobs(25, "WelcomeMailerJob", "default", 0, ago(7200))
    execs("ready_executions", "queue_name, created_at", f"queue_name, {ago(7200)}",
          "WelcomeMailerJob")
    jobs(3, "DigestJob", "mailers", 0, ago(2400))
    execs("scheduled_executions", "queue_name, scheduled_at, created_at",
          f"queue_name, {ago(2400)}, {ago(2400)}", "DigestJob")
    jobs(4, "ChargeCardJob", "payments", 2, ago(600))
    execs("scheduled_executions", "queue_name, scheduled_at, created_at",
          f"queue_name, {ago(-300)}, {ago(600)}", "ChargeCardJob")
    jobs(2, "ExportJob", "exports", 0, ago(3700))
    execs("claimed_executions", "process_id, created_at",
          f"(SELECT id FROM solid_queue_processes WHERE name = 'worker-dead'), {ago(3650)}",
          "ExportJob")
    jobs(1, "ThumbJob", "default", 0, now)
    execs("claimed_executions", "process_id, created_at",
          f"(SELECT id FROM solid_queue_processes WHERE name = 'worker-live'), {now}", "ThumbJob")
    jobs(7, "SyncJob", "default", 0, ago(4000))
    run(f"INSERT INTO solid_queue_failed_executions (job_id, error, created_at) SELECT id, %s,"
        f" {ago(3600)} FROM solid_queue_jobs WHERE class_name = 'SyncJob' ORDER BY id LIMIT 6",
        (sq_error("RuntimeError", 'sync failed: "acme" said no'),))
    run(f"INSERT INTO solid_queue_failed_executions (job_id, error, created_at) SELECT id, %s,"
        f" {ago(3 * 86400)} FROM solid_queue_jobs WHERE class_name = 'SyncJob' ORDER BY id DESC"
        f" LIMIT 1", (sq_error("RuntimeError", "old"),))
    jobs(3, "ImportJob", "imports", 0, ago(1000))
    run(f"INSERT INTO solid_queue_failed_executions (job_id, error, created_at) SELECT id, %s,"
        f" {ago(900)} FROM solid_queue_jobs WHERE class_name = 'ImportJob'",
        (sq_error("SolidQueue::Processes::ProcessPrunedError", PRUNED),))


def assert_solid_queue(data: dict[str, Any], table: str) -> None:
    rules = by_rule(data, table)
    backlog = {f["evidence"]["queue"]: f for f in rules["QU001"]}
    assert set(backlog) == {"default", "mailers"}
    assert backlog["default"]["evidence"]["depth"] == 25
    assert 7190 <= backlog["default"]["evidence"]["age_seconds"] <= 7300
    assert backlog["mailers"]["evidence"]["depth"] == 3 and backlog["mailers"]["severity"] == "critical"
    (expired,) = rules["QU002"]
    assert expired["evidence"]["count"] == 2 and expired["evidence"]["queues"] == {"exports": 2}
    assert 3590 <= expired["evidence"]["oldest_seconds"] <= 3700
    assert "ProcessPrunedError" in expired["summary"]
    (repeated,) = rules["QU003"]
    assert repeated["evidence"]["count"] == 4 and repeated["evidence"]["max_attempts"] == 3
    assert repeated["evidence"]["by_class"][0]["job_class"] == "ChargeCardJob"
    # one job lookup per execution: read from the oldest 10,000 of each kind, and said so
    assert repeated["evidence"]["repeated_window"] == 10_000
    failed = {(f["evidence"]["exception"], f["evidence"]["job_class"]): f for f in rules["QU004"]}
    assert set(failed) == {("RuntimeError", "SyncJob"), ("SolidQueue::Processes::ProcessPrunedError",
                                                        "ImportJob")}
    assert failed[("RuntimeError", "SyncJob")]["evidence"]["count"] == 6     # not the 3-day one
    pruned = failed[("SolidQueue::Processes::ProcessPrunedError", "ImportJob")]
    assert pruned["evidence"]["count"] == 3 and pruned["evidence"]["kind"] == "worker_lost"


def test_solid_queue_mariadb(my_db: tuple[str, Any]) -> None:
    url, conn = my_db
    run = my_run(conn)
    for stmt in solid_queue_ddl("mysql"):
        run(stmt)
    fill_solid_queue(run, "mysql")
    data = audit(url)
    assert data["targets"][0]["rules_unknown"] == {}
    assert_solid_queue(data, url.rsplit("/", 1)[1] + ".solid_queue_jobs")


def test_solid_queue_postgresql(pg_db: tuple[str, Any]) -> None:
    url, conn = pg_db
    run = pg_run(conn)
    for stmt in solid_queue_ddl("postgresql"):
        run(stmt)
    fill_solid_queue(run, "postgresql")
    data = audit(url)
    assert data["targets"][0]["rules_unknown"] == {}
    assert_solid_queue(data, "public.solid_queue_jobs")


# graphile-worker 0.16's tables, as its __tests__/schema.sql dumps them (the view `jobs` joins them)
GRAPHILE_DDL = [
    "CREATE SCHEMA graphile_worker",
    """CREATE TABLE graphile_worker._private_jobs (id bigint NOT NULL, job_queue_id integer,
    task_id integer NOT NULL, payload json DEFAULT '{}'::json NOT NULL,
    priority smallint DEFAULT 0 NOT NULL, run_at timestamp with time zone DEFAULT now() NOT NULL,
    attempts smallint DEFAULT 0 NOT NULL, max_attempts smallint DEFAULT 25 NOT NULL,
    last_error text, created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL, key text,
    locked_at timestamp with time zone, locked_by text, revision integer DEFAULT 0 NOT NULL,
    flags jsonb, is_available boolean GENERATED ALWAYS AS (((locked_at IS NULL)
    AND (attempts < max_attempts))) STORED NOT NULL,
    CONSTRAINT jobs_key_check CHECK (((length(key) > 0) AND (length(key) <= 512))),
    CONSTRAINT jobs_max_attempts_check CHECK ((max_attempts >= 1)))""",
    """CREATE TABLE graphile_worker._private_job_queues (id integer NOT NULL,
    queue_name text NOT NULL, locked_at timestamp with time zone, locked_by text,
    is_available boolean GENERATED ALWAYS AS ((locked_at IS NULL)) STORED NOT NULL,
    CONSTRAINT job_queues_queue_name_check CHECK ((length(queue_name) <= 128)))""",
    """CREATE TABLE graphile_worker._private_tasks (id integer NOT NULL, identifier text NOT NULL,
    CONSTRAINT tasks_identifier_check CHECK ((length(identifier) <= 128)))""",
    *(f"ALTER TABLE graphile_worker._private_{t} ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY"
      for t in ("jobs", "job_queues", "tasks")),
    "ALTER TABLE ONLY graphile_worker._private_job_queues ADD CONSTRAINT job_queues_pkey1 PRIMARY KEY (id)",
    "ALTER TABLE ONLY graphile_worker._private_jobs ADD CONSTRAINT jobs_pkey1 PRIMARY KEY (id)",
    "ALTER TABLE ONLY graphile_worker._private_tasks ADD CONSTRAINT tasks_pkey PRIMARY KEY (id)",
    """CREATE INDEX jobs_main_index ON graphile_worker._private_jobs USING btree (priority, run_at)
    INCLUDE (id, task_id, job_queue_id) WHERE (is_available = true)""",
    """CREATE VIEW graphile_worker.jobs AS SELECT jobs.id, job_queues.queue_name,
    tasks.identifier AS task_identifier, jobs.priority, jobs.run_at, jobs.attempts,
    jobs.max_attempts, jobs.last_error, jobs.created_at, jobs.updated_at, jobs.key, jobs.locked_at,
    jobs.locked_by, jobs.revision, jobs.flags FROM ((graphile_worker._private_jobs jobs
    JOIN graphile_worker._private_tasks tasks ON ((tasks.id = jobs.task_id)))
    LEFT JOIN graphile_worker._private_job_queues job_queues ON ((job_queues.id = jobs.job_queue_id)))""",
]

# pg-boss 10's job table (plans.js createTableJob), a queue partition as create_queue() makes
# it, and the archive (LIKE job, plus archived_on) that must not be read as a queue.
PGBOSS10_DDL = [
    "CREATE SCHEMA pgboss",
    "CREATE TYPE pgboss.job_state AS ENUM ('created', 'retry', 'active', 'completed', 'cancelled', 'failed')",
    """CREATE TABLE pgboss.job (id uuid not null default gen_random_uuid(), name text not null,
    priority integer not null default(0), data jsonb,
    state pgboss.job_state not null default('created'), retry_limit integer not null default(2),
    retry_count integer not null default(0), retry_delay integer not null default(0),
    retry_backoff boolean not null default false,
    start_after timestamp with time zone not null default now(),
    started_on timestamp with time zone, singleton_key text,
    singleton_on timestamp without time zone,
    expire_in interval not null default interval '15 minutes',
    created_on timestamp with time zone not null default now(),
    completed_on timestamp with time zone,
    keep_until timestamp with time zone NOT NULL default now() + interval '14 days',
    output jsonb, dead_letter text, policy text) PARTITION BY LIST (name)""",
    "ALTER TABLE pgboss.job ADD PRIMARY KEY (name, id)",
    "CREATE TABLE pgboss.archive (LIKE pgboss.job)",
    "ALTER TABLE pgboss.archive ADD PRIMARY KEY (name, id)",
    "ALTER TABLE pgboss.archive ADD archived_on timestamptz NOT NULL DEFAULT now()",
    *(stmt for q in ("emails", "reports") for stmt in (
        f"CREATE TABLE pgboss.j_{q} (LIKE pgboss.job INCLUDING DEFAULTS)",
        f"ALTER TABLE pgboss.j_{q} ADD PRIMARY KEY (name, id)",
        (f"CREATE INDEX j_{q}_i5 ON pgboss.j_{q} (name, start_after)"
         f" INCLUDE (priority, created_on, id) WHERE state < 'active'"),
        f"ALTER TABLE pgboss.job ATTACH PARTITION pgboss.j_{q} FOR VALUES IN ('{q}')")),
]
STACK = "TypeError: Cannot read properties of undefined (reading 'id')\n    at render (/app/report.js:12:5)"


def fill_graphile(run: Any) -> None:
    run("INSERT INTO graphile_worker._private_tasks (identifier)"
        " VALUES ('send_email'), ('resize'), ('sync')")
    run("INSERT INTO graphile_worker._private_job_queues (queue_name) VALUES ('images')")
    task = "(SELECT id FROM graphile_worker._private_tasks WHERE identifier = '{}')"
    ins = ("INSERT INTO graphile_worker._private_jobs (task_id, job_queue_id, run_at, attempts,"
           " max_attempts, last_error, locked_at, locked_by, updated_at) SELECT {}, {}, {}, {}, {},"
           " {}, {}, {}, {} FROM generate_series(1, {})")
    images = "(SELECT id FROM graphile_worker._private_job_queues)"
    run(ins.format(task.format("send_email"), "NULL", "now() - interval '2 hours'", 0, 25, "NULL",
                   "NULL", "NULL", "now() - interval '2 hours'", 15))
    run(ins.format(task.format("resize"), images, "now() - interval '5 hours'", 1, 25, "NULL",
                   "now() - interval '5 hours'", "'worker-7f3a'", "now() - interval '5 hours'", 3))
    run(ins.format(task.format("sync"), "NULL", "now() + interval '1 minute'", 3, 25,
                   "'read ECONNRESET'", "NULL", "NULL", "now() - interval '1 day'", 4))
    # failed for good an hour ago: fail_job pushed run_at exp(10) s past the failure
    run(ins.format(task.format("sync"), "NULL",
                   "now() - interval '1 hour' + make_interval(secs => exp(10))", 25, 25,
                   "'upstream returned 503'", "NULL", "NULL", "now() - interval '1 day'", 6))
    run(ins.format(task.format("sync"), "NULL", "now() - interval '3 days'", 25, 25,
                   "'old failure'", "NULL", "NULL", "now() - interval '3 days'", 2))


def fill_pgboss(run: Any) -> None:
    ins = ("INSERT INTO pgboss.job (name, state, retry_count, start_after, started_on,"
           " completed_on, output) SELECT %s, %s, {}, {}, {}, {}, %s FROM generate_series(1, {})")
    run(ins.format(0, "now() - interval '2 hours'", "NULL", "NULL", 20), ("emails", "created", None))
    run(ins.format(2, "now() + interval '5 minutes'", "now() - interval '10 minutes'", "NULL", 4),
        ("emails", "retry", None))
    run(ins.format(0, "now() - interval '1 hour'", "now() - interval '1 hour'", "NULL", 2),
        ("reports", "active", None))
    run(ins.format(0, "now()", "now() - interval '1 minute'", "NULL", 1), ("reports", "active", None))
    run(ins.format(2, "now() - interval '1 hour'", "now() - interval '40 minutes'",
                   "now() - interval '30 minutes'", 5),
        ("reports", "failed", json.dumps({"stack": STACK, "message": "Cannot read properties"})))
    run(ins.format(0, "now() - interval '1 hour'", "now() - interval '1 hour'", "now()", 50),
        ("reports", "completed", json.dumps({"ok": True})))
    run("INSERT INTO pgboss.archive SELECT *, now() FROM pgboss.job WHERE state = 'failed'")


def test_graphile_worker_and_pg_boss_postgresql(pg_db: tuple[str, Any]) -> None:
    url, conn = pg_db
    run = pg_run(conn)
    for stmt in GRAPHILE_DDL + PGBOSS10_DDL:
        run(stmt)
    fill_graphile(run)
    fill_pgboss(run)
    data = audit(url)
    assert data["targets"][0]["rules_unknown"] == {}
    assert by_rule(data, "pgboss.archive") == {}         # the archive is not a queue
    gw = by_rule(data, "graphile_worker._private_jobs")
    (backlog,) = gw["QU001"]
    assert backlog["evidence"]["depth"] == 15 and backlog["evidence"]["queue"] == "(none)"
    assert 7190 <= backlog["evidence"]["age_seconds"] <= 7300
    (locked,) = gw["QU002"]
    assert locked["evidence"]["count"] == 3 and locked["evidence"]["queues"] == {"images": 3}
    assert locked["evidence"]["retry_after_seconds"] == 300  # reported after 5 min (frees at 4 h)
    (rep,) = gw["QU003"]
    assert rep["evidence"]["count"] == 4 and rep["evidence"]["by_class"][0]["job_class"] == "sync"
    (failed,) = gw["QU004"]
    assert failed["evidence"]["count"] == 6 and failed["evidence"]["job_class"] == "sync"
    assert 3500 <= failed["evidence"]["latest_seconds_ago"] <= 3700
    assert "upstream returned 503" in failed["summary"]
    boss = by_rule(data, "pgboss.job")
    (backlog,) = boss["QU001"]
    assert backlog["evidence"]["queue"] == "emails" and backlog["evidence"]["depth"] == 20
    (expired,) = boss["QU002"]
    assert expired["evidence"]["count"] == 2 and expired["evidence"]["retry_after_seconds"] == 900
    (rep,) = boss["QU003"]
    assert rep["evidence"]["count"] == 4 and rep["evidence"]["max_attempts"] == 3
    (failed,) = boss["QU004"]
    assert failed["evidence"]["count"] == 5 and failed["evidence"]["exception"] == "TypeError"
    assert failed["evidence"]["job_class"] == "reports"


PGBOSS_CURRENT_DDL = """CREATE TABLE boss2.job (id uuid not null default gen_random_uuid(),
  name text not null, priority integer not null default(0), data jsonb,
  state boss2.job_state not null default 'created', retry_limit integer not null default 2,
  retry_count integer not null default 0, retry_delay integer not null default 0,
  retry_backoff boolean not null default false, retry_delay_max integer,
  expire_seconds int not null default 900, deletion_seconds int not null default 604800,
  singleton_key text, singleton_on timestamp without time zone, group_id text, group_tier text,
  start_after timestamp with time zone not null default now(),
  created_on timestamp with time zone not null default now(), started_on timestamp with time zone,
  completed_on timestamp with time zone,
  keep_until timestamp with time zone NOT NULL default now() + interval '1209600',
  output jsonb, dead_letter text, policy text, heartbeat_on timestamp with time zone,
  heartbeat_seconds int, PRIMARY KEY (name, id))"""


def test_pg_boss_expire_seconds_postgresql(pg_db: tuple[str, Any]) -> None:
    """pg-boss 11+ (expire_seconds, unpartitioned): an active job past its own expiry."""
    url, conn = pg_db
    run = pg_run(conn)
    run("CREATE SCHEMA boss2")
    run("CREATE TYPE boss2.job_state AS ENUM ('created', 'retry', 'active', 'completed',"
        " 'cancelled', 'failed')")
    run(PGBOSS_CURRENT_DDL)
    run("INSERT INTO boss2.job (name, state, started_on, expire_seconds) VALUES"
        " ('pdf', 'active', now() - interval '10 minutes', 60),"
        " ('pdf', 'active', now() - interval '10 minutes', 3600)")
    (expired,) = by_rule(audit(url), "boss2.job")["QU002"]
    assert expired["evidence"]["count"] == 1 and expired["evidence"]["retry_after_seconds"] == 60


# Laravel's job_batches migration (queue:batches-table), per engine
BATCHES_DDL = {
    "mysql": ("CREATE TABLE job_batches (id varchar(255) NOT NULL PRIMARY KEY,"
              " name varchar(255) NOT NULL, total_jobs int NOT NULL, pending_jobs int NOT NULL,"
              " failed_jobs int NOT NULL, failed_job_ids longtext NOT NULL, options mediumtext NULL,"
              " cancelled_at int NULL, created_at int NOT NULL, finished_at int NULL)"
              " DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"),
    "postgresql": ('CREATE TABLE "job_batches" ("id" varchar(255) NOT NULL PRIMARY KEY,'
                   ' "name" varchar(255) NOT NULL, "total_jobs" integer NOT NULL,'
                   ' "pending_jobs" integer NOT NULL, "failed_jobs" integer NOT NULL,'
                   ' "failed_job_ids" text NOT NULL, "options" text NULL,'
                   ' "cancelled_at" integer NULL, "created_at" integer NOT NULL,'
                   ' "finished_at" integer NULL)'),
}


def fill_batches(run: Any, engine: str) -> None:
    now = "UNIX_TIMESTAMP()" if engine == "mysql" else "extract(epoch FROM now())::int"
    ins = ("INSERT INTO job_batches (id, name, total_jobs, pending_jobs, failed_jobs, failed_job_ids,"
           " cancelled_at, created_at, finished_at) VALUES (%s, %s, %s, %s, %s, '[]', {}, {}, {})")
    run(ins.format("NULL", f"{now} - 8 * 3600", "NULL"), ("b1", "ImportUsers", 100, 40, 0))
    run(ins.format("NULL", f"{now} - 120", "NULL"), ("b2", "Nightly", 10, 5, 0))
    run(ins.format(f"{now} - 3500", f"{now} - 3600", "NULL"), ("b3", "SyncInvoices", 10, 3, 3))
    run(ins.format("NULL", f"{now} - 3600", f"{now} - 60"), ("b4", "Done", 10, 0, 0))


def assert_batches(data: dict[str, Any], table: str) -> None:
    rules = by_rule(data, table)
    assert set(rules) == {"QU001", "QU004"}
    (backlog,) = rules["QU001"]
    assert backlog["evidence"]["queue"] == "ImportUsers" and backlog["evidence"]["depth"] == 40
    assert backlog["severity"] == "critical" and "batches named ImportUsers" in backlog["summary"]
    (failed,) = rules["QU004"]
    ev = failed["evidence"]
    assert (ev["kind"], ev["job_class"], ev["count"]) == ("batch", "SyncInvoices", 3)
    assert "queue:retry-batch" in failed["fix"]


@pytest.mark.parametrize("engine", ["mysql", "postgresql"])
def test_laravel_batches(engine: str, my_db: tuple[str, Any], pg_db: tuple[str, Any]) -> None:
    url, conn = my_db if engine == "mysql" else pg_db
    run = my_run(conn) if engine == "mysql" else pg_run(conn)
    run(BATCHES_DDL[engine])
    fill_batches(run, engine)
    data = audit(url)
    assert data["targets"][0]["rules_unknown"] == {}
    assert_batches(data, (url.rsplit("/", 1)[1] if engine == "mysql" else "public") + ".job_batches")


def test_new_libraries_healthy(my_db: tuple[str, Any], pg_db: tuple[str, Any]) -> None:
    """Fresh jobs, a live worker, nothing retried or failed: no QU finding on any of them."""
    run = my_run(my_db[1])
    for stmt in solid_queue_ddl("mysql") + [BATCHES_DDL["mysql"]]:
        run(stmt)
    fill_solid_queue(run, "mysql", healthy=True)
    data = audit(my_db[0])
    assert [f for f in data["findings"] if f["rule"].startswith("QU0")] == []
    assert len({t["table"] for t in collect_tables(my_db[0])}) == 2
    run = pg_run(pg_db[1])
    for stmt in solid_queue_ddl("postgresql") + GRAPHILE_DDL + PGBOSS10_DDL + [BATCHES_DDL["postgresql"]]:
        run(stmt)
    fill_solid_queue(run, "postgresql", healthy=True)
    run("INSERT INTO graphile_worker._private_tasks (identifier) VALUES ('send_email')")
    run("INSERT INTO graphile_worker._private_jobs (task_id) SELECT id FROM graphile_worker._private_tasks")
    run("INSERT INTO pgboss.job (name) VALUES ('emails')")
    run("INSERT INTO job_batches VALUES ('b', 'Fresh', 3, 3, 0, '[]', NULL, NULL,"
        " extract(epoch FROM now())::int, NULL)")
    data = audit(pg_db[0])
    assert [f for f in data["findings"] if f["rule"].startswith("QU0")] == []
    kinds = {t["kind"] for t in collect_tables(pg_db[0])}
    assert kinds == {"solid_queue", "graphile_worker", "pg_boss", "laravel_batches"}


def collect_tables(url: str) -> list[dict[str, Any]]:
    target = open_target(spec_for(url))
    try:
        data = collect(target)
    finally:
        target.close()
    assert getattr(data, "message", None) is None, data.message
    tables: list[dict[str, Any]] = data["tables"]
    return tables


def table_of(url: str, kind: str) -> dict[str, Any]:
    """The one table of this kind the queue probe read."""
    (t,) = [t for t in collect_tables(url) if t["kind"] == kind]
    return t


def test_laravel_batches_postgresql_newest_window(
    pg_db: tuple[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """job_batches has only its varchar key: PostgreSQL reads the newest `window` batches by key
    (ordered UUIDs), a key range found by a walk down the key, and says when more are past it
    (`window_capped_ids`), with or without statistics; an unfinished batch older than the
    window is not read, and the table's entry says the window was capped."""
    import dbwatch.probes.queue as queue_probe

    url, conn = pg_db
    run = pg_run(conn)
    run(BATCHES_DDL["postgresql"])
    monkeypatch.setattr(queue_probe, "WINDOW", 50)
    ins = ("INSERT INTO job_batches (id, name, total_jobs, pending_jobs, failed_jobs, failed_job_ids,"
           " created_at, finished_at) SELECT 'k' || lpad(i::text, 4, '0'), %s, 10, %s, 0, '[]',"
           " extract(epoch FROM now())::int - 600, %s::int FROM generate_series(%s::int, %s::int) i")

    def batches() -> dict[str, Any]:
        (t,) = [t for t in collect_tables(url) if t["kind"] == "laravel_batches"]
        return t

    run(ins, ("Oldest", 4, None, 1, 30))  # unfinished
    t = batches()
    assert t["window_capped_ids"] is False
    assert {r["queue"]: r["total"] for r in t["summary"]} == {"Oldest": 30}
    run(ins, ("Middle", 4, None, 1000, 1009))  # unfinished
    run(ins, ("Done", 0, 1_700_000_000, 2000, 2045))  # finished, the newest keys
    t = batches()  # 86 batches: the newest 50 by key are the 46 done and 4 of 'Middle'
    assert t["window_capped_ids"] is True
    assert {r["queue"]: r["total"] for r in t["summary"]} == {"Middle": 4}
    run("ANALYZE job_batches")  # the same with statistics
    t = batches()
    assert t["window_capped_ids"] is True
    assert {r["queue"]: r["total"] for r in t["summary"]} == {"Middle": 4}
    run("DELETE FROM job_batches WHERE name <> 'Done'")
    run("ANALYZE job_batches")
    t = batches()
    assert t["window_capped_ids"] is False and t["summary"] == []


SYMFONY_MY_DDL = (
    "CREATE TABLE messenger_messages (id BIGINT AUTO_INCREMENT NOT NULL, body LONGTEXT NOT NULL,"
    " headers LONGTEXT NOT NULL, queue_name VARCHAR(190) NOT NULL, created_at DATETIME NOT NULL,"
    " available_at DATETIME NOT NULL, delivered_at DATETIME DEFAULT NULL,"
    " INDEX IDX_75EA56E0FB7336F0 (queue_name), INDEX IDX_75EA56E0E3BD61CE (available_at),"
    " INDEX IDX_75EA56E016BA31DB (delivered_at), PRIMARY KEY(id)) ENGINE = InnoDB"
)


def test_symfony_mariadb_window_is_its_own(
    my_db: tuple[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Symfony's messages on MariaDB are read over a smaller window than WINDOW (a clustered
    lookup per row of a wide body): the window rows read, the evidence's `window` and the
    summary's counts follow KIND_WINDOW, not WINDOW, and a full window is said to be capped;
    other kinds and PostgreSQL keep WINDOW."""
    import dbwatch.probes.queue as queue_probe

    assert queue_probe.window_for("mysql", "symfony_messenger") < WINDOW
    assert queue_probe.window_for("mariadb", "symfony_messenger") < WINDOW
    assert queue_probe.window_for("postgresql", "symfony_messenger") == WINDOW
    assert queue_probe.window_for("mysql", "laravel_jobs") == WINDOW
    url, conn = my_db
    run = my_run(conn)
    run(SYMFONY_MY_DDL)
    ins = ("INSERT INTO messenger_messages (body, headers, queue_name, created_at, available_at)"
           " SELECT 'x', '[]', %s, NOW() - INTERVAL 1 HOUR, NOW() - INTERVAL 1 HOUR"
           " FROM seq_1_to_{n}")
    run(ins.format(n=40), ("default",))
    monkeypatch.setitem(queue_probe.KIND_WINDOW, ("mysql", "symfony_messenger"), 25)
    monkeypatch.setattr(queue_probe, "WINDOW", 1000)  # would read all 40 if it applied

    t = table_of(url, "symfony_messenger")
    assert t["window"] == 25 and t["window_capped_ids"] is True
    assert sum(r["total"] for r in t["summary"]) == 25
    run("DELETE FROM messenger_messages WHERE id > 20")
    t = table_of(url, "symfony_messenger")
    assert t["window"] == 25 and t["window_capped_ids"] is False
    assert sum(r["total"] for r in t["summary"]) == 20


SYMFONY_PG_DDL = [
    "CREATE TABLE messenger_messages (id BIGSERIAL NOT NULL, body TEXT NOT NULL, headers TEXT NOT"
    " NULL, queue_name VARCHAR(190) NOT NULL, created_at TIMESTAMP(0) WITHOUT TIME ZONE NOT NULL,"
    " available_at TIMESTAMP(0) WITHOUT TIME ZONE NOT NULL, delivered_at TIMESTAMP(0) WITHOUT"
    " TIME ZONE DEFAULT NULL, PRIMARY KEY(id))",
    "CREATE INDEX IDX_75EA56E0FB7336F0 ON messenger_messages (queue_name)",
    "CREATE INDEX IDX_75EA56E0E3BD61CE ON messenger_messages (available_at)",
    "CREATE INDEX IDX_75EA56E016BA31DB ON messenger_messages (delivered_at)",
]


@pytest.mark.parametrize("engine", ["postgresql", "mysql"])
def test_symfony_failed_envelopes_read_are_capped(
    engine: str, my_db: tuple[str, Any], pg_db: tuple[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The failure transport's messages whose envelope is read are capped, the newest first
    (KIND_FAILED_TEXT_ROWS), inside the unchanged id window; the cap is the table's
    failed_window, so a full cap is QU004's "at least N"; newer ordinary messages do not count."""
    import dbwatch.probes.queue as queue_probe

    pg = engine == "postgresql"
    url, conn = pg_db if pg else my_db
    run = pg_run(conn) if pg else my_run(conn)
    for stmt in SYMFONY_PG_DDL if pg else [SYMFONY_MY_DDL]:
        run(stmt)
    now = "localtimestamp" if pg else "NOW()"
    for i in range(3):
        body = ('O:36:"Symfony\\Component\\Messenger\\Envelope":2:{s:14:"exceptionClass";'
                f's:16:"RuntimeException{i}";}}' + "#0 /app/src/x.php(1): f()\n" * 400)
        run("INSERT INTO messenger_messages (body, headers, queue_name, created_at, available_at)"
            f" VALUES (%s, '[]', 'failed', {now}, {now})", (body,))
    run("INSERT INTO messenger_messages (body, headers, queue_name, created_at, available_at)"
        f" VALUES ('x', '[]', 'default', {now}, {now})")
    family = "postgresql" if pg else "mysql"
    monkeypatch.setitem(queue_probe.KIND_FAILED_TEXT_ROWS, (family, "symfony_messenger"), 2)
    t = table_of(url, "symfony_messenger")
    assert t["failed_window"] == 2
    heads = sorted(r["head"] for r in t["failed"])
    assert len(heads) == 2 and "RuntimeException1" in heads[0] and "RuntimeException2" in heads[1]
    assert sum(r["n"] for r in t["failed"]) >= t["failed_window"] > 0  # QU004: at least 2
    monkeypatch.setitem(queue_probe.KIND_FAILED_TEXT_ROWS, (family, "symfony_messenger"), 5)
    t = table_of(url, "symfony_messenger")
    assert t["failed_window"] == 5 and sum(r["n"] for r in t["failed"]) == 3


def test_laravel_failed_jobs_mariadb_failed_window_is_its_own(
    my_db: tuple[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Laravel's failed_jobs is read over its own newest-failures window (KIND_FAILED_WINDOW:
    each row's stack trace is read), not FAILED_WINDOW: the failures counted and the table's
    `failed_window` (QU004's "window full") follow it; other kinds keep FAILED_WINDOW."""
    import dbwatch.probes.queue as queue_probe

    for engine in ("mariadb", "mysql", "postgresql"):
        assert queue_probe.failed_window_for(engine, "laravel_failed") < queue_probe.FAILED_WINDOW
    assert queue_probe.failed_window_for("postgresql", "que") == queue_probe.FAILED_WINDOW
    url, conn = my_db
    run = my_run(conn)
    for stmt in MY_DDL:
        run(stmt.format(p=""))
    run("INSERT INTO failed_jobs (uuid, connection, queue, payload, exception)"
        " SELECT UUID(), 'database', 'mail', %s, 'RuntimeException: boom' FROM seq_1_to_40",
        (payload("App\\Jobs\\SendMail"),))
    monkeypatch.setitem(queue_probe.KIND_FAILED_WINDOW, ("mysql", "laravel_failed"), 25)
    monkeypatch.setattr(queue_probe, "FAILED_WINDOW", 1000)  # would count all 40 if it applied

    t = table_of(url, "laravel_failed")
    assert t["failed_window"] == 25 and sum(r["n"] for r in t["failed"]) == 25
    run("DELETE FROM failed_jobs WHERE id > 20")
    t = table_of(url, "laravel_failed")
    assert t["failed_window"] == 25 and sum(r["n"] for r in t["failed"]) == 20


def test_laravel_failed_jobs_postgresql_job_class_by_byte_search(
    pg_db: tuple[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job class is the string after the payload's first "displayName" key, read without a
    regex (queue_laravel_failed_failed.sql): json_encode's form, spaces around the colon, a key
    whose value is no string, no key at all; a stack trace kept in TOAST gives its first line.
    The newest-failures window is Laravel's own on PostgreSQL too."""
    import dbwatch.probes.queue as queue_probe

    url, conn = pg_db
    run = pg_run(conn)
    for stmt in PG_DDL:
        run(stmt.format(p=""))
    trace = "\n".join(f"#{i} /app/vendor/laravel/framework/src/x{i}.php(1): f()" for i in range(400))
    rows = [
        (payload("App\\Jobs\\SendMail"), DEADLOCK + "\nStack trace:\n" + trace),
        ('{"uuid":"1","displayName" :  "App\\\\Jobs\\\\Spaced","job":"x"}', "RuntimeException: a"),
        ('{"uuid":"2","displayName":null,"job":"Illuminate\\\\Queue\\\\CallQueuedHandler@call"}',
         "RuntimeException: b"),
        ('{"uuid":"3","job":"x"}', "RuntimeException: c"),
    ]
    for i, (body, exc) in enumerate(rows):
        run("INSERT INTO failed_jobs (uuid, connection, queue, payload, exception)"
            " VALUES (%s, 'database', 'mail', %s, %s)", (f"u{i}", body, exc))
    assert conn.execute("SELECT pg_column_size(exception) < octet_length(exception)"
                        " FROM failed_jobs WHERE uuid = 'u0'").fetchone()[0]  # compressed
    monkeypatch.setitem(queue_probe.KIND_FAILED_WINDOW, ("postgresql", "laravel_failed"), 3)
    t = table_of(url, "laravel_failed")
    assert t["failed_window"] == 3
    got = sorted((r["job_class"] or "", r["head"], r["n"]) for r in t["failed"])
    assert got == [("", "RuntimeException: b", 1), ("", "RuntimeException: c", 1),
                   ("App\\\\Jobs\\\\Spaced", "RuntimeException: a", 1)], got  # as stored
    monkeypatch.setitem(queue_probe.KIND_FAILED_WINDOW, ("postgresql", "laravel_failed"), 10)
    t = table_of(url, "laravel_failed")
    (deadlock,) = [r for r in t["failed"] if r["job_class"] and "SendMail" in r["job_class"]]
    assert deadlock["head"] == DEADLOCK.split(" (Connection: ")[0] and deadlock["n"] == 1


def test_que_big_poll_index_walks_the_key_without_counting(
    pg_db: tuple[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Que's summary and repeated queries count the unfinished jobs (through que_poll_idx) only
    while the table's partial indexes are at most POLL_BYTES; larger, they walk the primary
    key at once. Both ways give the same rows, over and under the window, and with finished
    and expired jobs among them; the plan says which way was taken."""
    import dbwatch.probes.queue as queue_probe

    url, conn = pg_db
    run = pg_run(conn)
    run(QUE_DDL)
    run("CREATE INDEX que_poll_idx ON que_jobs (queue, priority, run_at, id)"
        " WHERE finished_at IS NULL AND expired_at IS NULL")
    run("INSERT INTO que_jobs (run_at, job_class, queue, error_count)"
        " SELECT now() - interval '1 hour', 'SendMail', 'q' || (g % 3), g % 4"
        " FROM generate_series(1, 60) g")
    run("UPDATE que_jobs SET finished_at = now() WHERE id % 5 = 0")
    run("UPDATE que_jobs SET expired_at = now() WHERE id % 7 = 0 AND finished_at IS NULL")

    def read() -> tuple[list[Any], list[Any]]:
        t = table_of(url, "que")
        assert t["error"] is None
        return t["summary"], t["repeated"]

    monkeypatch.setattr(queue_probe, "WINDOW", 1000)  # every unfinished job fits the window
    counted = read()
    assert sum(r["total"] for r in counted[0]) == 60 - 12 - 7  # finished and expired left out
    monkeypatch.setattr(queue_probe, "POLL_BYTES", 0)  # the index is "large": the walk at once
    assert read() == counted
    monkeypatch.setattr(queue_probe, "WINDOW", 20)  # over the window: the oldest 20 by id
    walked = read()
    assert sum(r["total"] for r in walked[0]) == 20
    monkeypatch.setattr(queue_probe, "POLL_BYTES", 8 << 20)
    assert read() == walked

    # the plan: with a large index the count (before ANALYZE a bitmap of que_poll_idx) never runs
    text = (Path(queue_probe.__file__).parent / "sql" / "postgresql" / "queue_que_summary.sql")
    sql_text = text.read_text().replace("{table}", "que_jobs")

    def poll_index_loops(poll_bytes: int) -> int:
        args = {"window": 20, "groups": 500, "poll_bytes": poll_bytes}
        plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql_text, args).fetchone()[0]
        found: list[int] = []

        def walk(node: dict[str, Any]) -> None:
            # a read of the unfinished jobs by their own predicate (the count, or the counted
            # branch): through que_poll_idx, or filtered on finished_at outside the walk's CASE
            cond = " ".join(str(node.get(k, "")) for k in ("Filter", "Recheck Cond", "Index Cond"))
            by_predicate = "finished_at IS NULL" in cond and "CASE" not in cond
            if node.get("Index Name") == "que_poll_idx" or by_predicate:
                found.append(int(node.get("Actual Loops", 0)))
            for child in node.get("Plans", []):
                walk(child)

        walk(plan[0]["Plan"])
        return sum(found)

    assert poll_index_loops(8 << 20) >= 1
    assert poll_index_loops(0) == 0
