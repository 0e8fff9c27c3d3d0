"""The generic queue model on job tables spelled as ORMs and other languages spell them: quoted
camelCase columns and a dead-letter table (PostgreSQL), camelCase with epoch-millisecond integer times and a boolean
"picked" flag (MariaDB), and a results table whose failures are a boolean success column —
exact QU001 300 / QU002 3 / QU004 10 from the roles alone, queries quoting the columns as the
catalog spells them, and a healthy state with no QU finding."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pymysql
import pytest
from queue_libs import audit, by_rule, pg_database, queue_findings

# a Prisma-style job table: quoted camelCase columns
PG_CAMEL = """
CREATE TABLE queue_jobs (id bigserial PRIMARY KEY, queue text NOT NULL, payload jsonb,
  "runAt" timestamptz NOT NULL DEFAULT now(), "lockedAt" timestamptz, "lockedBy" text,
  "finishedAt" timestamptz, "failedAt" timestamptz, "lastError" text,
  attempts int NOT NULL DEFAULT 0, "maxAttempts" int NOT NULL DEFAULT 3,
  "createdAt" timestamptz NOT NULL DEFAULT now());
CREATE INDEX ON queue_jobs ("runAt");
CREATE TABLE dead_letter_jobs (id bigserial PRIMARY KEY, "jobType" text, payload jsonb,
  error text, "createdAt" timestamptz NOT NULL DEFAULT now());
INSERT INTO queue_jobs (queue, payload, "runAt", "lockedAt", "lockedBy", "finishedAt", attempts)
  SELECT 'mail', '{}', now() - interval '3 hours', now() - interval '3 hours', 'w1',
         now() - interval '3 hours', 1 FROM generate_series(1, 20);
"""
PG_UNHEALTHY = [
    "INSERT INTO queue_jobs (queue, payload, \"runAt\") SELECT 'mail', '{}', now() - "
    "interval '1 hour' FROM generate_series(1, 300)",
    "INSERT INTO queue_jobs (queue, payload, \"runAt\", \"failedAt\", \"lastError\", attempts) "
    "SELECT 'mail', '{}', now() - interval '1 hour', now() - interval '10 min', 'Error: boom', 3 "
    "FROM generate_series(1, 10)",
    "INSERT INTO dead_letter_jobs (\"jobType\", payload, error) SELECT 'send', '{}', "
    "'Error: gave up' FROM generate_series(1, 4)",
    "INSERT INTO queue_jobs (queue, payload, \"runAt\", \"lockedAt\", \"lockedBy\", attempts) "
    "SELECT 'mail', '{}', now() - interval '1 hour', now() - interval '1 hour', 'w2', 1 "
    "FROM generate_series(1, 3)",
]

# camelCase, epoch-millisecond times, a boolean flag set while a worker holds the row (a
# failure marker and no success one: finished jobs leave the table, a claim is a live one); and
# a results table of finished runs (a boolean success)
MY_CAMEL = [
    "CREATE TABLE jobQueue (id bigint AUTO_INCREMENT PRIMARY KEY, jobType varchar(100),"
    " jobData longtext, runAt bigint NOT NULL, picked tinyint(1) NOT NULL DEFAULT 0,"
    " pickedAt bigint, failedAt bigint, createdAt bigint, KEY (runAt))",
    "CREATE TABLE job_results (id bigint AUTO_INCREMENT PRIMARY KEY, taskName varchar(100),"
    " args longtext, success tinyint(1) NOT NULL, finishedAt datetime(3), error text)",
    "INSERT INTO job_results (taskName, args, success, finishedAt) SELECT 'send', '[]', 1,"
    " NOW() - INTERVAL 2 HOUR FROM seq_1_to_5",
]
MY_UNHEALTHY = [
    "INSERT INTO jobQueue (jobType, jobData, runAt, createdAt) SELECT 'send', '{}',"
    " (UNIX_TIMESTAMP() - 3600) * 1000, (UNIX_TIMESTAMP() - 3600) * 1000 FROM seq_1_to_300",
    "INSERT INTO jobQueue (jobType, jobData, runAt, picked, pickedAt) SELECT 'export', '{}',"
    " (UNIX_TIMESTAMP() - 3600) * 1000, 1, (UNIX_TIMESTAMP() - 3600) * 1000 FROM seq_1_to_3",
    "INSERT INTO job_results (taskName, args, success, finishedAt, error) SELECT 'charge', '[]',"
    " 0, NOW() - INTERVAL 10 MINUTE, 'ValueError: declined' FROM seq_1_to_10",
]


def _counts(data: dict[str, Any], table: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in queue_findings(data, table):
        assert f["evidence"]["library"] == "generic", f
        key = "depth" if f["rule"] == "QU001" else "count"
        out[f["rule"]] = out.get(f["rule"], 0) + int(f["evidence"][key])
    return out


def test_quoted_camel_case_columns_postgresql(uniq: str) -> None:
    db = f"dbw_gs_{uniq}"
    with pg_database(db) as dsn:
        url = f"postgresql://postgres@127.0.0.1:5432/{db}"
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(PG_CAMEL)
            healthy = audit(url, "--select", "QU,DW")
            for stmt in PG_UNHEALTHY:
                c.execute(stmt)  # type: ignore[arg-type]
        data = audit(url, "--select", "QU,DW")
    assert queue_findings(healthy) == [] and not by_rule(healthy, "DW001")
    assert not by_rule(data, "DW001"), by_rule(data, "DW001")
    assert _counts(data, "public.queue_jobs") == {"QU001": 300, "QU002": 3, "QU004": 10}
    (backlog,) = [f for f in queue_findings(data) if f["rule"] == "QU001"]
    roles = backlog["evidence"]["roles"]
    assert roles["runnable_at"] == "runAt" and roles["claimed_by"] == "lockedBy"
    assert roles["max_attempts"] == "maxAttempts" and roles["finished_at"] == "finishedAt"
    assert '"runAt"' in backlog["fix"]  # quoted as the catalog spells it
    # a dead-letter table beside it: every row a failure, timed by its creation
    assert _counts(data, "public.dead_letter_jobs") == {"QU004": 4}


@pytest.fixture
def my_db(uniq: str) -> Iterator[tuple[str, Any]]:
    admin = pymysql.connect(host="127.0.0.1", port=3306, user="root", password="", autocommit=True)
    db = f"dbw_gs_{uniq}"
    admin.cursor().execute(f"CREATE DATABASE {db}")
    admin.select_db(db)
    yield f"mysql://root@127.0.0.1:3306/{db}", admin
    admin.cursor().execute(f"DROP DATABASE {db}")
    admin.close()


def test_epoch_ms_flags_and_results_mariadb(my_db: tuple[str, Any]) -> None:
    url, conn = my_db
    cur = conn.cursor()
    for stmt in MY_CAMEL:
        cur.execute(stmt)
    healthy = audit(url, "--select", "QU,DW")
    assert queue_findings(healthy) == [] and not by_rule(healthy, "DW001")
    for stmt in MY_UNHEALTHY:
        cur.execute(stmt)
    data = audit(url, "--select", "QU,DW")
    assert not by_rule(data, "DW001"), by_rule(data, "DW001")
    db = url.rsplit("/", 1)[1]
    assert _counts(data, f"{db}.jobQueue") == {"QU001": 300, "QU002": 3}
    (backlog,) = [f for f in queue_findings(data) if f["rule"] == "QU001"]
    assert 3500 <= backlog["evidence"]["age_seconds"] <= 3800  # epoch ms read as a time
    assert backlog["evidence"]["roles"]["claimed_flag"] == "picked"
    # the results table: its failures only, never a backlog or a claim
    assert _counts(data, f"{db}.job_results") == {"QU004": 10}


# django-tasks' database backend (0.8): `run_after` NOT NULL, the maximum date meaning "no
# time set"; READY / RUNNING / FAILED / SUCCEEDED
PG_SENTINEL = """
CREATE TABLE task_results (id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  status varchar(10) NOT NULL, enqueued_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz, finished_at timestamptz, args_kwargs jsonb NOT NULL DEFAULT '{}',
  priority int NOT NULL DEFAULT 0, task_path text NOT NULL, queue_name varchar(32) NOT NULL,
  run_after timestamptz NOT NULL DEFAULT '9999-12-31 23:59:59+00', traceback text NOT NULL
  DEFAULT '');
CREATE INDEX ON task_results (status);
INSERT INTO task_results (status, enqueued_at, task_path, queue_name)
  SELECT 'READY', now() - interval '1 hour', 'app.send', 'default' FROM generate_series(1, 300);
INSERT INTO task_results (status, enqueued_at, task_path, queue_name, run_after)
  SELECT 'READY', now(), 'app.later', 'default', now() + interval '1 day'
  FROM generate_series(1, 7);
"""


def test_a_far_future_time_is_no_time_postgresql(uniq: str) -> None:
    db = f"dbw_gt_{uniq}"
    with pg_database(db) as dsn:
        url = f"postgresql://postgres@127.0.0.1:5432/{db}"
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(PG_SENTINEL)
        data = audit(url, "--select", "QU,DW")
    assert not by_rule(data, "DW001"), by_rule(data, "DW001")
    # the 300 with the placeholder are due since their enqueue; the 7 scheduled are not
    assert _counts(data, "public.task_results") == {"QU001": 300}
    (backlog,) = queue_findings(data, "public.task_results")
    assert 3500 <= backlog["evidence"]["age_seconds"] <= 3800
