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

from dbwatch.probes.queue import collect
from dbwatch.targets import open_target, spec_for

JOB = "App\\Jobs\\SendInvoice"
MY_DDL = [
    "CREATE TABLE `{p}jobs` (`id` bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,"
    " `queue` varchar(255) NOT NULL, `payload` longtext NOT NULL, `attempts` tinyint unsigned NOT NULL,"
    " `reserved_at` int unsigned NULL, `available_at` int unsigned NOT NULL,"
    " `created_at` int unsigned NOT NULL, KEY `{p}jobs_queue_index` (`queue`))"
    " DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
    "CREATE TABLE `{p}failed_jobs` (`id` bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY,"
    " `uuid` varchar(255) NOT NULL, `connection` text NOT NULL, `queue` text NOT NULL,"
    " `payload` longtext NOT NULL, `exception` longtext NOT NULL,"
    " `failed_at` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,"
    " UNIQUE KEY `{p}failed_jobs_uuid_unique` (`uuid`)) DEFAULT CHARACTER SET utf8mb4",
]
PG_DDL = [
    'CREATE TABLE "{p}jobs" ("id" bigserial PRIMARY KEY NOT NULL, "queue" varchar(255) NOT NULL,'
    ' "payload" text NOT NULL, "attempts" smallint NOT NULL, "reserved_at" integer NULL,'
    ' "available_at" integer NOT NULL, "created_at" integer NOT NULL)',
    'CREATE INDEX "{p}jobs_queue_index" ON "{p}jobs" ("queue")',
    'CREATE TABLE "{p}failed_jobs" ("id" bigserial PRIMARY KEY NOT NULL, "uuid" varchar(255) NOT NULL,'
    ' "connection" text NOT NULL, "queue" text NOT NULL, "payload" text NOT NULL,'
    ' "exception" text NOT NULL,'
    ' "failed_at" timestamp(0) without time zone DEFAULT CURRENT_TIMESTAMP NOT NULL)',
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
    admin.execute(f"CREATE DATABASE {db}")
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
    out = subprocess.run([sys.executable, "-m", "dbwatch", "audit", url, "--select", "QU0",
                          "--format", "json", *extra], capture_output=True, text=True, timeout=60)
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
