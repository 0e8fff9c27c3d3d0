"""pg-boss and GoodJob summary/repeated queries read their window queue by queue (issue 28
item 5): the plain definition — pg-boss, the first `window` created/retry jobs in (name,
start_after) order and the active ones apart; GoodJob, the first `window` unfinished jobs in
(queue_name, scheduled_at) order — was read cold by a bitmap of every waiting job and a sort
(250–380 ms at a 1 M backlog). The walk must return the plain definition's rows for every
window (small windows on small tables, one transaction: one now()), on pg-boss 12's indexes
(`blocked`, job_i14) and 10's (job_i5, partitions per queue); and a backlog past the window
must still give its findings, saying the window was capped."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from queue_libs import audit, by_rule, pg_database

from dbwatch.probes.queue import WINDOW
from dbwatch.probes.queue_sql import compose
from dbwatch.probes.sqlfiles import sql
from dbwatch.queues.pg_boss import fragments
from dbwatch.targets.version import ServerVersion

PG15 = ServerVersion("postgresql", 15, 0, 0)
STATES = "ARRAY['created', 'retry', 'active', 'completed', 'failed', 'created', 'retry']"
# pg-boss 12.x (plans.js): `blocked`, the live-state index job_i14, job_i15; one table
PGBOSS12 = f"""
CREATE TYPE job_state AS ENUM ('created', 'retry', 'active', 'completed', 'cancelled', 'failed');
CREATE TABLE job (id uuid NOT NULL DEFAULT gen_random_uuid(), name text NOT NULL,
  state job_state NOT NULL, start_after timestamptz NOT NULL, started_on timestamptz,
  retry_count integer NOT NULL, created_on timestamptz NOT NULL DEFAULT now(),
  blocked boolean NOT NULL DEFAULT false, PRIMARY KEY (name, id));
CREATE INDEX job_i14 ON job (name, state, blocked, start_after)
  WHERE state IN ('created', 'retry', 'active', 'failed');
CREATE INDEX job_i15 ON job (name, created_on);
INSERT INTO job (name, state, start_after, started_on, retry_count, blocked)
  SELECT 'q' || (g % 3), ({STATES})[g % 7 + 1]::job_state,
         now() + CASE WHEN g % 11 = 0 THEN g ELSE -g END * interval '1 minute',
         CASE WHEN g % 7 = 2 THEN now() - g * interval '1 second' END, g % 4, g % 5 = 0
  FROM generate_series(1, 240) g WHERE g % 7 <> 2 OR g < 30;
INSERT INTO job (name, state, start_after, retry_count) SELECT 'z', 'completed', now(), 0
  FROM generate_series(1, 5);
-- queues whose only waiting jobs are blocked (before the first queue, between, after the last),
-- and one with only finished and failed jobs: the walk finds the first, skips the last
INSERT INTO job (name, state, start_after, retry_count, blocked)
  SELECT q, s::job_state, now() - g * interval '1 hour', g % 2, s <> 'failed'
  FROM (VALUES ('a_blocked', 'created'), ('q1x', 'retry'), ('r_blocked', 'created'),
               ('m_idle', 'failed')) v(q, s), generate_series(1, 3) g;
"""
# pg-boss 10.x: no `blocked`; job_i5 on (name, start_after) WHERE state < 'active'; a partition
# per queue (create_queue)
PGBOSS10 = f"""
CREATE TYPE job_state AS ENUM ('created', 'retry', 'active', 'completed', 'cancelled', 'failed');
CREATE TABLE job (id uuid NOT NULL DEFAULT gen_random_uuid(), name text NOT NULL,
  state job_state NOT NULL, start_after timestamptz NOT NULL, started_on timestamptz,
  retry_count integer NOT NULL) PARTITION BY LIST (name);
ALTER TABLE job ADD PRIMARY KEY (name, id);
CREATE TABLE j0 PARTITION OF job FOR VALUES IN ('q0');
CREATE TABLE j1 PARTITION OF job FOR VALUES IN ('q1');
CREATE TABLE jd PARTITION OF job DEFAULT;
CREATE INDEX job_i5 ON job (name, start_after) WHERE state < 'active';
INSERT INTO job (name, state, start_after, started_on, retry_count)
  SELECT 'q' || (g % 3), ({STATES})[g % 7 + 1]::job_state,
         now() + CASE WHEN g % 11 = 0 THEN g ELSE -g END * interval '1 minute',
         CASE WHEN g % 7 = 2 THEN now() - g * interval '1 second' END, g % 4
  FROM generate_series(1, 240) g WHERE g % 7 <> 2 OR g < 30;
"""
# The plain definitions (the queries before the walk), run as the reference
PGBOSS_SUMMARY = """
SELECT w.name, count(*),
       count(*) FILTER (WHERE w.state < 'active' AND w.start_after <= now()),
       extract(epoch FROM now() - min(w.start_after) FILTER (WHERE w.state < 'active'
                                                           AND w.start_after <= now()))::bigint,
       count(*) FILTER (WHERE w.state = 'active'),
       extract(epoch FROM now() - min(w.started_on) FILTER (WHERE w.state = 'active'))::bigint,
       count(*) FILTER (WHERE w.retry_count > 0), max(w.retry_count) + 1
FROM ((SELECT name, state, start_after, started_on, retry_count FROM job
       WHERE state IN ('created', 'retry') ORDER BY name, start_after LIMIT %(window)s)
      UNION ALL
      (SELECT name, state, start_after, started_on, retry_count FROM job
       WHERE state = 'active')) w
GROUP BY w.name ORDER BY 1
"""
# pg-boss 10/11 (no index on active jobs): the summary reads the waiting window only; its
# reserved counts are NULL (not zero) and the reserved query reads every active job instead
PGBOSS10_SUMMARY = """
SELECT w.name, count(*), count(*) FILTER (WHERE w.start_after <= now()),
       extract(epoch FROM now() - min(w.start_after) FILTER (WHERE w.start_after <= now()))::bigint,
       NULL::bigint, NULL::bigint, count(*) FILTER (WHERE w.retry_count > 0),
       max(w.retry_count) + 1
FROM (SELECT name, start_after, retry_count FROM job WHERE state IN ('created', 'retry')
      ORDER BY name, start_after LIMIT %(window)s) w
GROUP BY w.name ORDER BY 1
"""
PGBOSS_REPEATED = """
SELECT w.name, w.retry_count + 1, left(w.name, 255), NULL::text, count(*)
FROM ((SELECT name, retry_count FROM job
       WHERE state IN ('created', 'retry') ORDER BY name, start_after LIMIT %(window)s)
      UNION ALL
      (SELECT name, retry_count FROM job WHERE state = 'active')) w
WHERE w.retry_count > 0
GROUP BY 1, 2, 3
"""
# GoodJob 4 (its install migration's indexes that these queries use)
GOODJOB = """
CREATE TABLE good_jobs (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), queue_name text,
  serialized_params jsonb, scheduled_at timestamp, performed_at timestamp,
  finished_at timestamp, error text, created_at timestamp NOT NULL,
  executions_count integer);
CREATE INDEX index_good_jobs_on_queue_name_and_scheduled_at ON good_jobs (queue_name,
  scheduled_at) WHERE finished_at IS NULL;
CREATE INDEX index_good_jobs_on_scheduled_at ON good_jobs (scheduled_at)
  WHERE finished_at IS NULL;
INSERT INTO good_jobs (queue_name, serialized_params, scheduled_at, performed_at, finished_at,
                       created_at, executions_count)
  SELECT (ARRAY['default', 'mailers', NULL, 'low'])[g % 4 + 1],
         jsonb_build_object('job_class', 'Job' || (g % 2)),
         CASE WHEN g IN (13, 26) THEN NULL
              ELSE (now() AT TIME ZONE 'UTC')
                   + CASE WHEN g % 9 = 0 THEN g ELSE -g END * interval '1 minute' END,
         CASE WHEN g % 6 = 1 THEN (now() AT TIME ZONE 'UTC') - g * interval '1 second' END,
         CASE WHEN g % 5 = 0 THEN (now() AT TIME ZONE 'UTC') END,
         (now() AT TIME ZONE 'UTC') - g * interval '2 minutes', g % 4
  FROM generate_series(1, 260) g;
"""
GOODJOB_WINDOW = """(SELECT queue_name, performed_at, coalesce(scheduled_at, created_at) AS due,
       executions_count, serialized_params FROM good_jobs WHERE finished_at IS NULL
       ORDER BY queue_name, scheduled_at LIMIT %(window)s)"""
GOODJOB_SUMMARY = f"""
SELECT w.queue_name, count(*),
       count(*) FILTER (WHERE w.performed_at IS NULL AND w.due <= now() AT TIME ZONE 'UTC'),
       extract(epoch FROM now() AT TIME ZONE 'UTC' - min(w.due) FILTER (
         WHERE w.performed_at IS NULL AND w.due <= now() AT TIME ZONE 'UTC'))::bigint,
       count(*) FILTER (WHERE w.performed_at IS NOT NULL),
       extract(epoch FROM now() AT TIME ZONE 'UTC' - min(w.performed_at))::bigint,
       count(*) FILTER (WHERE w.executions_count > 1), max(w.executions_count)
FROM {GOODJOB_WINDOW} w
GROUP BY w.queue_name ORDER BY 1
"""
GOODJOB_REPEATED = f"""
SELECT w.queue_name, w.executions_count, left(w.serialized_params ->> 'job_class', 255),
       NULL::text, count(*)
FROM {GOODJOB_WINDOW} w
WHERE w.executions_count > 1
GROUP BY 1, 2, 3
"""


def _rows(c: Any, text: str, window: int) -> list[tuple[Any, ...]]:
    got = c.execute(text, {"window": window, "groups": 500, "horizon": 86400}).fetchall()
    return sorted(got, key=repr)


def _query(kind: str, aspect: str, table: str, frags: dict[str, str]) -> str:
    return compose("postgresql", sql("postgresql", f"queue_{kind}_{aspect}", PG15),
                   {"table": ("public", table)}, frags)


@pytest.mark.parametrize("major", ["12", "10"])
def test_pgboss_walk_reads_the_plain_window(major: str, uniq: str) -> None:
    with pg_database(f"dbwq_window_pgboss{major}_{uniq}") as conninfo, \
            psycopg.connect(conninfo) as conn:
        conn.execute(PGBOSS12 if major == "12" else PGBOSS10)
        frags = fragments({"blocked": "boolean"} if major == "12" else {})
        assert frags["by_queue"] == ("true" if major == "12" else "false")
        waiting = int(conn.execute("SELECT count(*) FROM job WHERE state < 'active'")
                      .fetchone()[0])
        active = int(conn.execute("SELECT count(*) FROM job WHERE state = 'active'").fetchone()[0])
        assert waiting > 100 and 0 < active <= 5
        summary = _query("pg_boss", "summary", "job", frags)
        # 10's active jobs on a later try are the sweep's (test_queue_pgboss_sweep.py): the
        # query with its active part on (12's) is compared to the plain definition here
        repeated = _query("pg_boss", "repeated", "job", frags | {"active_scan": "true"})
        reference = PGBOSS_SUMMARY if major == "12" else PGBOSS10_SUMMARY
        # 10: the active jobs are the reserved query's, every one of them
        claimed = _rows(conn, _query("pg_boss", "reserved", "job", frags | {
            "expire": "NULL::int", "hb_age": "NULL::bigint", "hb_limit": "NULL::int"}), 1000)
        assert sum(r[2] for r in claimed) == active
        for window in (5, 13, 79, waiting - 1, waiting, waiting + 7, 1000):
            got = _rows(conn, summary, window)
            assert got == _rows(conn, reference, window), window
            # the window holds min(window, waiting) waiting jobs and (12) every active one
            assert sum(r[1] for r in got) == min(window, waiting) + (active if major == "12"
                                                                      else 0)
            assert all((r[4] is None) == (major == "10") for r in got)
            tried = _rows(conn, repeated, window)
            assert tried == _rows(conn, PGBOSS_REPEATED, window), window
            assert tried and all(r[1] > 1 for r in tried)


def test_goodjob_walk_reads_the_plain_window(uniq: str) -> None:
    with pg_database(f"dbwq_window_goodjob_{uniq}") as conninfo, psycopg.connect(conninfo) as conn:
        conn.execute(GOODJOB)
        unfinished = int(conn.execute("SELECT count(*) FROM good_jobs WHERE finished_at IS NULL")
                         .fetchone()[0])
        summary = _query("good_job", "summary", "good_jobs", {})
        repeated = _query("good_job", "repeated", "good_jobs", {})
        # past the named queues (their jobs fill it) and into the jobs without a queue
        for window in (4, 29, 100, 150, unfinished - 1, unfinished, unfinished + 3, 1000):
            got = _rows(conn, summary, window)
            assert got == _rows(conn, GOODJOB_SUMMARY, window), window
            assert sum(r[1] for r in got) == min(window, unfinished)
            tried = _rows(conn, repeated, window)
            assert tried == _rows(conn, GOODJOB_REPEATED, window), window
        assert any(r[0] is None for r in _rows(conn, summary, 1000)), "jobs without a queue"


def test_backlog_past_the_window_still_gives_its_findings(uniq: str) -> None:
    """A backlog of the shape that was slow (one queue, more waiting jobs than the window, no
    statistics): QU001 for it, its evidence saying the window was capped at WINDOW rows."""
    backlog = WINDOW + 2_000
    with pg_database(f"dbwq_window_findings_{uniq}") as conninfo:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA pgboss")
            conn.execute("SET search_path = pgboss")
            conn.execute(PGBOSS12.split("INSERT INTO")[0])
            for col in ("priority integer NOT NULL DEFAULT 0", "retry_limit integer NOT NULL "
                        "DEFAULT 2", "completed_on timestamptz", "keep_until timestamptz NOT "
                        "NULL DEFAULT now() + interval '14 days'", "output jsonb",
                        "expire_seconds integer NOT NULL DEFAULT 900"):
                conn.execute(f"ALTER TABLE job ADD COLUMN {col}")
            conn.execute("INSERT INTO job (name, state, start_after, retry_count) SELECT "
                         "'emails', 'created', now() - interval '3 hours' + g * interval "
                         "'1 millisecond', 0 FROM generate_series(1, %s) g", (backlog,))
            conn.execute("SET search_path = public")
            conn.execute(GOODJOB.split("INSERT INTO")[0])
            conn.execute("INSERT INTO good_jobs (queue_name, serialized_params, scheduled_at, "
                         "created_at, executions_count) SELECT 'default', '{}', (now() AT TIME "
                         "ZONE 'UTC') - interval '3 hours' + g * interval '1 millisecond', "
                         "now() AT TIME ZONE 'UTC', 0 FROM generate_series(1, %s) g",
                         (backlog,))
            for table in ("pgboss.job", "public.good_jobs"):
                conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
            # as a bulk load leaves them: no statistics (the cold plans this is about)
            stats = conn.execute("SELECT count(*) FROM pg_stats WHERE tablename IN "
                                 "('job', 'good_jobs')").fetchone()[0]
            assert stats == 0
        url = "postgresql://postgres@127.0.0.1:5432/" + conninfo.rsplit("dbname=", 1)[1]
        data = audit(url, "--select", "QU001")
        found = {f["evidence"]["table"]: f for f in by_rule(data, "QU001")}
        for table, library, queue in (("pgboss.job", "pg-boss", "emails"),
                                      ("public.good_jobs", "good_job", "default")):
            ev = found[table]["evidence"]
            assert ev["library"] == library and ev["queue"] == queue
            # what was read, said: the window was capped at WINDOW rows of this backlog
            assert ev["window_capped"] is True and ev["window_rows"] == WINDOW
            assert ev["depth"] >= WINDOW - 1 and ev["age_seconds"] >= 3 * 3600 - 120
            assert found[table]["severity"] == "critical"


SOLID_QUEUE = """
CREATE TABLE jobs (id bigserial PRIMARY KEY, queue_name varchar(255) NOT NULL,
  class_name varchar(255) NOT NULL);
CREATE TABLE failed (id bigserial PRIMARY KEY, job_id bigint NOT NULL, error text,
  created_at timestamp NOT NULL);
INSERT INTO jobs (queue_name, class_name) SELECT 'q' || (g % 2), 'Job' || (g % 3)
  FROM generate_series(1, 40) g;
"""
ERRORS = [
    '{"exception_class":"RuntimeError","message":"boom","backtrace":["a.rb:1"]}',
    '{"exception_class" : "Net::ReadTimeout", "message" : "said \\"no\\" twice"}',
    '{"message":"no class here"}',
    '{"exception_class":"' + "X" * 230 + '","message":"long class"}',
    'not json at all: "message": "after text"',
    '{"exception_class":"A","message":"' + "m" * 900 + '"}',
    '{"backtrace":["x"],"exception_class":"Late","message":"key after the backtrace"}',
    None,
]
# the heads as the unanchored regexes over the first 2 kB read them (before strpos anchoring)
HEADS = """
SELECT coalesce((SELECT c FROM (SELECT substring(left(error, 2048) FROM
                  '"exception_class"\\s*:\\s*"([^"]+)"') AS c) k WHERE length(c) <= 200),
                '(unknown)')
       || ': ' || left(coalesce(substring(left(error, 2048) FROM
                  '"message"\\s*:\\s*"((?:[^"\\\\]|\\\\.)*)'), ''), 300), count(*)
FROM failed GROUP BY 1
"""


def test_solid_queue_failure_heads_anchored_where_the_key_is(uniq: str) -> None:
    """Solid Queue's failed query reads exception_class and message by regexes anchored where
    strpos finds each key (13 -> 3 us a row): the same heads as the unanchored regexes."""
    with pg_database(f"dbwq_sq_heads_{uniq}") as conninfo, psycopg.connect(conninfo) as conn:
        conn.execute(SOLID_QUEUE)
        for n, error in enumerate(ERRORS, start=1):
            conn.execute("INSERT INTO failed (job_id, error, created_at) SELECT id, %s, now() "
                         "AT TIME ZONE 'UTC' FROM jobs WHERE id %% 8 = %s", (error, n % 8))
        text = compose("postgresql", sql("postgresql", "queue_solid_queue_failed", PG15),
                       {"table": ("public", "jobs"), "failed_executions": ("public", "failed")},
                       {})
        got: dict[str, int] = {}
        for row in conn.execute(text, {"window": 1000, "groups": 500, "horizon": 86400}):
            got[row[1]] = got.get(row[1], 0) + row[3]
        want = dict(conn.execute(HEADS).fetchall())
        assert got == want and len(want) == len(ERRORS)
        assert "Net::ReadTimeout: said \\\"no\\\" twice" in got and "(unknown): no class here" in got
