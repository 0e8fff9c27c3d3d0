"""The generic queue model on the real local servers, with hand-made tables in the layouts of
job libraries dbwatch has no module for: exact QU001/QU002/QU004 from the roles alone, a named
DW002 where a table cannot tell something, a business schema with zero queue findings, and a
table the probe cannot read losing only itself (DW001 without a GRANT)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pymysql
import pytest
from queue_libs import audit, by_rule, pg_database, queue_findings

# django-background-tasks' Task table (PostgreSQL), filled as its runner leaves it
PG_TASKS = """
CREATE TABLE background_task (id serial PRIMARY KEY, task_name varchar(190) NOT NULL,
  task_params text NOT NULL, task_hash varchar(40), priority int NOT NULL DEFAULT 0,
  run_at timestamptz NOT NULL, attempts int NOT NULL DEFAULT 0, failed_at timestamptz,
  last_error text NOT NULL DEFAULT '', locked_by varchar(64), locked_at timestamptz,
  queue varchar(190));
CREATE INDEX ON background_task (run_at);
CREATE INDEX ON background_task (queue);
"""
# pq's queue table: nothing records a failure
PG_PQ = """
CREATE TABLE queue (id bigserial PRIMARY KEY, enqueued_at timestamptz NOT NULL DEFAULT now(),
  dequeued_at timestamptz, expected_at timestamptz, schedule_at timestamptz,
  q_name text NOT NULL, data json NOT NULL);
"""
# a Node app's own work table: a text state (indexed: read by a skip scan), a heartbeat
PG_WORK = """
CREATE TABLE work_items (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), kind text NOT NULL,
  args jsonb NOT NULL DEFAULT '{}', state text NOT NULL DEFAULT 'queued', run_after timestamptz
  NOT NULL DEFAULT now(), heartbeat_at timestamptz, worker_id text, attempts smallint DEFAULT 0,
  max_attempts smallint DEFAULT 5, last_error text, finished_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now());
CREATE INDEX ON work_items (state, run_after);
INSERT INTO work_items (kind, state, finished_at) SELECT 'sync', 'done', now()
  FROM generate_series(1, 50);
INSERT INTO work_items (kind, state, run_after) SELECT 'sync', 'snoozed', now()
  FROM generate_series(1, 2);
INSERT INTO work_items (kind, state, heartbeat_at, worker_id) SELECT 'sync', 'running',
  now() - interval '30 s', 'w-1' FROM generate_series(1, 2);
"""
# an e-commerce schema: statuses, schedules, attempts, errors, a lock column — no queue
BUSINESS = """
CREATE TABLE orders (id bigserial PRIMARY KEY, status text NOT NULL, total numeric(10,2),
  scheduled_at timestamptz, attempts int DEFAULT 0, last_error text, data jsonb,
  created_at timestamptz DEFAULT now(), updated_at timestamptz DEFAULT now());
CREATE TABLE payments (id bigserial PRIMARY KEY, order_id bigint, status text NOT NULL,
  amount numeric(10,2), attempts int, next_attempt_at timestamptz, locked_at timestamptz,
  last_error text, payload jsonb, created_at timestamptz DEFAULT now());
CREATE TABLE invoices (id bigserial PRIMARY KEY, status text, due_at timestamptz,
  sent_at timestamptz, data jsonb, created_at timestamptz DEFAULT now());
CREATE TABLE users (id bigserial PRIMARY KEY, email text, status text, locked_at timestamptz,
  failed_attempts int, created_at timestamptz DEFAULT now());
CREATE TABLE shop_order_items (id bigserial PRIMARY KEY, status text, scheduled_at timestamptz,
  data jsonb, processed_at timestamptz);
"""
BUSINESS_ROWS = [
    "INSERT INTO orders (status, scheduled_at, attempts, last_error) SELECT s, now() - interval "
    "'3 hours', 2, 'card declined' FROM unnest(ARRAY['pending','processing','failed',"
    "'completed','cancelled']) s, generate_series(1, 60)",
    "INSERT INTO payments (status, attempts, next_attempt_at, locked_at, last_error) SELECT "
    "'failed', 3, now() - interval '2 hours', now() - interval '2 hours', 'declined' "
    "FROM generate_series(1, 40)",
    "INSERT INTO invoices (status, due_at) SELECT 'pending', now() - interval '9 days' "
    "FROM generate_series(1, 40)",
    "INSERT INTO users (status, locked_at, failed_attempts) SELECT 'active', now() - interval "
    "'1 day', 5 FROM generate_series(1, 40)",
    "INSERT INTO shop_order_items (status, scheduled_at) SELECT 'queued', now() - interval "
    "'1 day' FROM generate_series(1, 40)",
]


def _fill_tasks(c: Any) -> None:
    c.execute("INSERT INTO background_task (task_name, task_params, run_at, queue) SELECT "
              "'app.tasks.send_mail', '[[], {}]', now() - interval '2 hours', 'mail' "
              "FROM generate_series(1, 300)")
    c.execute("INSERT INTO background_task (task_name, task_params, run_at, attempts, failed_at,"
              " last_error) SELECT 'app.tasks.charge', '[[], {}]', now() - interval '1 hour', 25,"
              " now() - interval '10 min', 'Traceback (most recent call last):' || chr(10) || "
              "'ValueError: card declined' FROM generate_series(1, 10)")
    # a worker SIGKILLed 40 minutes ago: its locks stay (this library never frees them)
    c.execute("INSERT INTO background_task (task_name, task_params, run_at, locked_by, "
              "locked_at, attempts) SELECT 'app.tasks.export', '[[], {}]', now() - interval "
              "'1 hour', '4242', now() - interval '40 min', 1 FROM generate_series(1, 3)")


def test_generic_model_postgresql(uniq: str) -> None:
    db = f"dbw_gm_{uniq}"
    with pg_database(db) as dsn:
        url = f"postgresql://postgres@127.0.0.1:5432/{db}"
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(PG_TASKS)
            c.execute(PG_PQ)
            c.execute(PG_WORK)
            c.execute(BUSINESS)
            for stmt in BUSINESS_ROWS:
                c.execute(stmt)
            # healthy: work done, nothing waits
            c.execute("INSERT INTO queue (q_name, data, dequeued_at) SELECT 'default', '{}', "
                      "now() FROM generate_series(1, 20)")
            healthy = audit(url, "--select", "QU,DW")
            assert queue_findings(healthy) == []
            _fill_tasks(c)
            c.execute("INSERT INTO queue (q_name, data, enqueued_at) SELECT 'default', '{}', "
                      "now() - interval '50 min' FROM generate_series(1, 120)")
        data = audit(url, "--select", "QU,DW")
    bt = queue_findings(data, "public.background_task")
    assert bt and all(f["evidence"]["library"] == "generic" for f in bt)
    assert not [f for f in bt if "artisan" in f["fix"] or "Laravel" in f["fix"]]
    (backlog,) = [f for f in bt if f["rule"] == "QU001"]
    ev = backlog["evidence"]
    assert ev["queue"] == "mail" and ev["depth"] == 300 and 7190 <= ev["age_seconds"] <= 7300
    assert ev["roles"]["runnable_at"] == "run_at" and ev["roles"]["claimed_at"] == "locked_at"
    assert ev["roles"]["failed_at"] == "failed_at" and ev["roles"]["job_type"] == "task_name"
    assert '"background_task"' in backlog["fix"] and '"run_at"' in backlog["fix"]
    (stuck,) = [f for f in bt if f["rule"] == "QU002"]
    assert stuck["evidence"]["count"] == 3 and 2390 <= stuck["evidence"]["oldest_seconds"] <= 2500
    assert "claim_timeout" in stuck["evidence"]["stuck_by"][0]
    (failed,) = [f for f in bt if f["rule"] == "QU004"]
    assert failed["evidence"]["count"] == 10 and failed["evidence"]["job_class"] == "app.tasks.charge"
    # pq: a backlog it can tell, failures and orphaned claims it cannot (a dequeued row looks
    # the same finished or orphaned): QU001 plus a DW002 naming what and why
    (pq,) = queue_findings(data, "public.queue")
    assert pq["rule"] == "QU001" and pq["evidence"]["depth"] == 120
    assert pq["evidence"]["unjudged"] == ["failed", "stuck"]
    (dw002,) = by_rule(data, "DW002")
    gaps = {g["name"]: g for g in dw002["evidence"]["gaps"]}
    assert gaps["public.queue"]["kind"] == "queue_unjudged"
    assert "stuck, failed not judged" in gaps["public.queue"]["reason"]
    assert "q_name" in gaps["public.queue"]["reason"]  # the columns seen
    # work_items: healthy (a live heartbeat), its statuses read from its index, one unmapped
    assert queue_findings(data, "public.work_items") == []
    wi = gaps["public.work_items"]
    assert wi["kind"] == "queue_unjudged" and "snoozed" in wi["reason"]
    # the business schema: no queue finding, no question about it either
    for table in ("orders", "payments", "invoices", "users", "shop_order_items"):
        assert queue_findings(data, f"public.{table}") == [], table
        assert f"public.{table}" not in gaps
    assert not by_rule(data, "DW001")


def test_generic_table_the_probe_cannot_read_loses_only_itself(uniq: str) -> None:
    """'infinity' in a runnable-at time overflows the age: that table is named in DW001 with
    its reason and QU001-QU004 unknown for it — no GRANT for a superuser — and the other
    queue table is still read."""
    db = f"dbw_gmf_{uniq}"
    with pg_database(db) as dsn:
        url = f"postgresql://postgres@127.0.0.1:5432/{db}"
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(PG_TASKS)
            c.execute(PG_TASKS.replace("background_task", "other_tasks"))
            _fill_tasks(c)
            c.execute("INSERT INTO other_tasks (task_name, task_params, run_at) VALUES "
                      "('x', '[]', '-infinity')")
        data = audit(url, "--select", "QU,DW")
    (dw001,) = by_rule(data, "DW001")
    assert "public.other_tasks" in dw001["summary"] and "QU001-QU004 unknown" in dw001["summary"]
    assert "GRANT" not in dw001["fix"] and "Not a privilege" in dw001["fix"]
    assert [f["rule"] for f in queue_findings(data, "public.background_task")].count("QU001") == 1


MY_QUEUE = """
CREATE TABLE job_queue (id bigint unsigned AUTO_INCREMENT PRIMARY KEY, queue varchar(64) NOT NULL,
  handler varchar(255) NOT NULL, payload json NOT NULL,
  status enum('queued','running','failed','done') NOT NULL DEFAULT 'queued',
  attempts tinyint unsigned NOT NULL DEFAULT 0, max_attempts tinyint unsigned NOT NULL DEFAULT 3,
  available_at datetime NOT NULL, reserved_at datetime NULL, reserved_by varchar(64) NULL,
  heartbeat_at datetime NULL, finished_at datetime NULL, error text NULL,
  created_at datetime NOT NULL DEFAULT CURRENT_TIMESTAMP, KEY (status, available_at))
"""
# an integer-coded status and no claim column: the model cannot tell states from the table
MY_CODED = """
CREATE TABLE tasks (id int AUTO_INCREMENT PRIMARY KEY, state tinyint NOT NULL, kind varchar(40),
  args text, run_after int unsigned, tries int, created_at int unsigned, KEY (state))
"""
MY_BUSINESS = """
CREATE TABLE payments (id int AUTO_INCREMENT PRIMARY KEY, status varchar(20), scheduled_at datetime,
  attempts int, last_error text, locked_at datetime, payload text)
"""


@pytest.fixture
def my_db(uniq: str) -> Iterator[tuple[str, Any]]:
    admin = pymysql.connect(host="127.0.0.1", port=3306, user="root", password="", autocommit=True)
    db = f"dbw_gm_{uniq}"
    admin.cursor().execute(f"CREATE DATABASE {db}")
    admin.select_db(db)
    yield f"mysql://root@127.0.0.1:3306/{db}", admin
    admin.cursor().execute(f"DROP DATABASE {db}")
    admin.close()


def test_generic_model_mariadb(my_db: tuple[str, Any]) -> None:
    url, conn = my_db
    cur = conn.cursor()
    for stmt in (MY_QUEUE, MY_CODED, MY_BUSINESS):
        cur.execute(stmt)
    cur.execute("INSERT INTO payments (status, scheduled_at, attempts, last_error, locked_at) "
                "SELECT 'failed', NOW() - INTERVAL 3 HOUR, 3, 'declined', NOW() - INTERVAL 3 HOUR "
                "FROM seq_1_to_30")
    cur.execute("INSERT INTO job_queue (queue, handler, payload, status, available_at, finished_at)"
                " SELECT 'default', 'App\\\\Send', '{}', 'done', NOW(), NOW() FROM seq_1_to_20")
    assert queue_findings(audit(url, "--select", "QU,DW")) == []
    cur.execute("INSERT INTO job_queue (queue, handler, payload, available_at) SELECT 'default',"
                " 'App\\\\Send', '{}', NOW() - INTERVAL 2 HOUR FROM seq_1_to_300")
    cur.execute("INSERT INTO job_queue (queue, handler, payload, status, attempts, available_at,"
                " finished_at, error) SELECT 'default', 'App\\\\Charge', '{}', 'failed', 3,"
                " NOW() - INTERVAL 1 HOUR, NOW() - INTERVAL 5 MINUTE, 'RuntimeException: declined'"
                " FROM seq_1_to_10")
    cur.execute("INSERT INTO job_queue (queue, handler, payload, status, attempts, available_at,"
                " reserved_at, reserved_by, heartbeat_at) SELECT 'default', 'App\\\\Export', '{}',"
                " 'running', 1, NOW() - INTERVAL 1 HOUR, NOW() - INTERVAL 1 HOUR, 'w1',"
                " NOW() - INTERVAL 20 MINUTE FROM seq_1_to_3")
    cur.execute("INSERT INTO tasks (state, kind, args, run_after, tries, created_at) SELECT 1, "
                "'x', '{}', UNIX_TIMESTAMP() - 3600, 0, UNIX_TIMESTAMP() - 3600 FROM seq_1_to_5")
    data = audit(url, "--select", "QU,DW")
    assert not by_rule(data, "DW001"), by_rule(data, "DW001")
    db = url.rsplit("/", 1)[1]
    jq = queue_findings(data, f"{db}.job_queue")
    assert jq and all(f["evidence"]["library"] == "generic" for f in jq)
    (backlog,) = [f for f in jq if f["rule"] == "QU001"]
    assert backlog["evidence"]["depth"] == 300
    assert backlog["evidence"]["statuses"]["running"] == ["running"]
    assert backlog["evidence"]["statuses_from"] == "the column's enum labels"
    (stuck,) = [f for f in jq if f["rule"] == "QU002"]
    assert stuck["evidence"]["count"] == 3 and "heartbeat" in stuck["evidence"]["stuck_by"][0]
    (failed,) = [f for f in jq if f["rule"] == "QU004"]
    assert failed["evidence"]["count"] == 10 and "`status` IN ('failed')" in failed["fix"]
    assert queue_findings(data, f"{db}.payments") == [] and queue_findings(data, f"{db}.tasks") == []
    (dw002,) = by_rule(data, "DW002")
    gaps = {g["name"]: g for g in dw002["evidence"]["gaps"]}
    assert gaps[f"{db}.tasks"]["kind"] == "queue_roles"
    assert "backlog, stuck and failed not judged" in gaps[f"{db}.tasks"]["reason"]
    assert f"{db}.payments" not in gaps


def test_generic_table_refused_is_a_grant(uniq: str) -> None:
    """A privilege really missing on a generic queue table: DW001 names the table with the
    GRANT that fixes it (the other side of the unreadable-table test)."""
    db, role = f"dbw_gmg_{uniq}", f"dbw_mon_{uniq}"
    with pg_database(db) as dsn:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(PG_TASKS)
            _fill_tasks(c)
            c.execute(f"CREATE ROLE {role} LOGIN")
        try:
            data = audit(f"postgresql://{role}@127.0.0.1:5432/{db}", "--select", "QU,DW")
        finally:
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute(f"DROP OWNED BY {role}")
            with psycopg.connect("host=127.0.0.1 user=postgres dbname=test", autocommit=True) as c:
                c.execute(f"DROP ROLE {role}")
    dw001 = [f for f in by_rule(data, "DW001") if "background_task" in f["summary"]]
    assert dw001 and 'GRANT SELECT ON "public"."background_task"' in dw001[0]["fix"]
    assert queue_findings(data, "public.background_task") == []


def test_generic_backlog_past_the_window_is_a_lower_bound(uniq: str) -> None:
    """A queue known by its columns only (django-background-tasks' table, no module of
    dbwatch's) holding more waiting jobs than the probe's window: its row estimate is not the
    queue (finished and failed rows stay), so QU001 says the count read as a lower bound —
    "at least N" — never as the depth."""
    db = f"dbw_gmw_{uniq}"
    with pg_database(db) as dsn:
        url = f"postgresql://postgres@127.0.0.1:5432/{db}"
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(PG_TASKS)
            c.execute("INSERT INTO background_task (task_name, task_params, run_at, queue) SELECT "
                      "'app.tasks.send_mail', '[[], {}]', now() - interval '2 hours', 'mail' "
                      "FROM generate_series(1, 120000)")
        data = audit(url, "--select", "QU")
    (backlog,) = [f for f in queue_findings(data, "public.background_task") if f["rule"] == "QU001"]
    ev = backlog["evidence"]
    assert ev["library"] == "generic" and ev["window_capped"] is True
    assert ev["depth_is_lower_bound"] is True and ev["depth"] == ev["window_rows"] < 120000
    assert f"at least {ev['depth']} jobs available" in backlog["summary"]
