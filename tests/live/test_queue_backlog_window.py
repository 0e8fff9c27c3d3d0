"""Oban, River, procrastinate and Que summary/repeated queries past their window (a backlog bigger than the oldest-
window read): a bounded read of the state index (`fit`) picks the plan — the state index when
the unfinished jobs fit, a primary-key walk when they do not. Both branches must return the
rows of the plain definition (the oldest `window` unfinished jobs by id): run here with small
windows on a small table, each branch forced and the chosen one, in one transaction (one now())."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from queue_libs import pg_database

from dbwatch.probes.queue import POLL_BYTES
from dbwatch.probes.queue_sql import compose
from dbwatch.probes.sqlfiles import sql
from dbwatch.queues.pg_boss import fragments
from dbwatch.targets.version import ServerVersion

OBAN = """
CREATE TYPE oban_job_state AS ENUM ('available', 'scheduled', 'executing', 'retryable',
  'completed', 'discarded', 'cancelled');
CREATE TABLE jobs (id bigserial PRIMARY KEY, state oban_job_state NOT NULL, queue text NOT NULL,
  worker text NOT NULL, attempt integer NOT NULL, scheduled_at timestamp NOT NULL,
  attempted_at timestamp);
CREATE INDEX ON jobs (state, queue, scheduled_at, id);
"""
RIVER = """
CREATE TYPE river_job_state AS ENUM ('available', 'cancelled', 'completed', 'discarded',
  'pending', 'retryable', 'running', 'scheduled');
CREATE TABLE jobs (id bigserial PRIMARY KEY, state river_job_state NOT NULL, queue text NOT NULL,
  kind text NOT NULL, attempt smallint NOT NULL, scheduled_at timestamptz NOT NULL,
  attempted_at timestamptz);
CREATE INDEX ON jobs (state, queue, scheduled_at, id);
"""
PROCRASTINATE = """
CREATE TYPE procrastinate_job_status AS ENUM ('todo', 'doing', 'succeeded', 'failed',
  'cancelled', 'aborting', 'aborted');
CREATE TABLE jobs (id bigserial PRIMARY KEY, status procrastinate_job_status NOT NULL,
  queue_name text NOT NULL, task_name text NOT NULL, attempts integer NOT NULL,
  scheduled_at timestamptz, attempted_at timestamptz, lock text);
CREATE INDEX ON jobs (id, lock) WHERE status IN ('todo', 'doing');
CREATE TABLE events (id bigserial PRIMARY KEY, job_id bigint NOT NULL, type text NOT NULL,
  at timestamptz NOT NULL);
"""
QUE = """
CREATE TABLE jobs (id bigserial PRIMARY KEY, queue text NOT NULL, priority smallint NOT NULL,
  run_at timestamptz NOT NULL, job_class text NOT NULL, args jsonb NOT NULL, error_count integer
  NOT NULL, finished_at timestamptz, expired_at timestamptz);
CREATE INDEX ON jobs (queue, priority, run_at, id) WHERE finished_at IS NULL AND expired_at IS NULL;
"""
LIBS = {
    "oban": (OBAN, "worker", ("available", "scheduled", "executing", "retryable"), "completed"),
    "procrastinate": (PROCRASTINATE, "task_name", ("todo", "doing"), "succeeded"),
    "que": (QUE, "job_class", (), ""),
    "river": (RIVER, "kind", ("available", "scheduled", "retryable", "running", "pending"),
              "completed"),
}
GATE = "(SELECT small FROM fit)"
PG15 = ServerVersion("postgresql", 15, 0, 0)


def _load(c: Any, lib: str) -> int:
    """Finished jobs first, then unfinished ones of every state interleaved with finished ones
    (two queues, attempts 0-2); returns how many are unfinished (River's pending is not)."""
    ddl, job, states, done = LIBS[lib]
    c.execute(ddl)
    if lib == "que":  # no state column: finished_at / expired_at set when it is over
        c.execute("INSERT INTO jobs (queue, priority, run_at, job_class, args, error_count, "
                  "finished_at, expired_at) SELECT 'q' || (g % 2), 100, now() - g * interval "
                  "'1 minute', CASE WHEN g % 3 = 0 THEN 'ActiveJob::QueueAdapters::QueAdapter"
                  "::JobWrapper' ELSE 'Mailer' END, '[{\"job_class\": \"Sync\"}]', g % 3, "
                  "CASE WHEN g <= 30 OR g % 4 = 0 THEN now() END, CASE WHEN g % 13 = 0 "
                  "THEN now() END FROM generate_series(1, 90) g")
        n = c.execute("SELECT count(*) FROM jobs WHERE finished_at IS NULL AND expired_at IS NULL")
        return int(n.fetchone()[0])
    now = "timezone('UTC', now())" if lib == "oban" else "now()"
    cols = {"state": "state", "queue": "queue", "attempt": "attempt"}
    if lib == "procrastinate":
        cols = {"state": "status", "queue": "queue_name", "attempt": "attempts"}
    state_, queue_, attempt_ = cols["state"], cols["queue"], cols["attempt"]
    c.execute(f"INSERT INTO jobs ({state_}, {queue_}, {job}, {attempt_}, scheduled_at) SELECT %s, "
              f"'q0', 'W', 1, {now} - interval '2 hours' FROM generate_series(1, 30)", (done,))
    for i in range(60):
        state = states[i % len(states)] if i % 4 else done
        c.execute(f"INSERT INTO jobs ({state_}, {queue_}, {job}, {attempt_}, scheduled_at, "
                  f"attempted_at) "
                  f"VALUES (%s, %s, %s, %s, {now} - make_interval(secs => %s), "
                  f"{now} - interval '1 minute')",
                  (state, f"q{i % 2}", f"W{i % 3}", i % 3, 600 - i * 7))
    if lib == "procrastinate":  # a deferred event for each job (its oldest job's age)
        c.execute("INSERT INTO events (job_id, type, at) SELECT id, 'deferred', now() FROM jobs")
    n: int = c.execute(f"SELECT count(*) FROM jobs WHERE {state_}::text IN "
                       "('available', 'scheduled', 'retryable', 'executing', 'running', "
                       "'todo', 'doing')").fetchone()[0]
    return n


def _rows(c: Any, text: str, window: int) -> list[tuple[Any, ...]]:
    """The rows, sorted: `repeated` orders by count only, ties in any order."""
    args = {"window": window, "groups": 500, "horizon": 86400, "poll_bytes": POLL_BYTES}
    got = c.execute(text, args).fetchall()
    return sorted(got, key=repr)


def _fits(c: Any, lib: str, window: int) -> bool:
    """What the gate must say: Oban, its unfinished states (before 'completed') within the
    window; River, each of its two unfinished ranges within half of it."""
    def count(cond: str) -> int:
        return int(c.execute(f"SELECT count(*) FROM jobs WHERE {cond}").fetchone()[0])

    if lib == "oban":
        return count("state < 'completed'") <= window
    if lib == "que":
        return count("finished_at IS NULL AND expired_at IS NULL") <= window
    if lib == "procrastinate":
        ids = c.execute("SELECT max(id) - min(id) FROM jobs WHERE status IN ('todo', 'doing')")
        return bool(ids.fetchone()[0] < window or count("status IN ('todo', 'doing')") <= window)
    half = window // 2
    return count("state <= 'available'") <= half and count("state >= 'retryable'") <= half


@pytest.mark.parametrize("lib", sorted(LIBS))
def test_backlog_past_the_window_reads_the_same_rows(lib: str, uniq: str) -> None:
    # one transaction: one now() for every query
    with pg_database(f"dbwq_backlog_{lib}_{uniq}") as conninfo, psycopg.connect(conninfo) as conn:
        unfinished = _load(conn, lib)
        assert unfinished > 20
        for aspect in ("summary", "repeated"):
            text = compose("postgresql", sql("postgresql", f"queue_{lib}_{aspect}", PG15),
                           {"table": ("public", "jobs"), "events": ("public", "events")}, {})
            assert text.count(GATE) == 2, "one gate per branch"
            fit = text[: text.index("\n)") + 2] + "\n"  # WITH fit AS (...): its closing line
            for window in (3, 8, unfinished - 1, unfinished, unfinished + 5, 1000):
                chosen = _rows(conn, text, window)
                by_index = _rows(conn, text.replace(GATE, "true"), window)
                by_walk = _rows(conn, text.replace(GATE, "false"), window)
                assert chosen == by_index == by_walk, (aspect, window)
                small = _rows(conn, fit + "SELECT small FROM fit", window)[0][0]
                assert small is _fits(conn, lib, window), (window, small)
                if aspect == "summary":  # the window holds the oldest `window` unfinished
                    assert sum(r[1] for r in chosen) == min(window, unfinished)
                else:
                    assert all(r[1] > 1 for r in chosen)


PGBOSS = """
CREATE TYPE job_state AS ENUM ('created', 'retry', 'active', 'completed', 'cancelled', 'failed');
CREATE TABLE job (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), name text NOT NULL,
  state job_state NOT NULL, start_after timestamptz NOT NULL, started_on timestamptz,
  retry_count integer NOT NULL);
CREATE INDEX ON job (name, start_after) WHERE state < 'active';
INSERT INTO job (name, state, start_after, retry_count)
  SELECT 'q' || (g % 3), (ARRAY['created', 'retry', 'active', 'completed', 'failed'])[g % 5 + 1]::job_state,
         now() - g * interval '1 minute', g % 4 FROM generate_series(1, 200) g;
"""


def test_pgboss_repeated_reads_every_unfinished_job_within_the_window(uniq: str) -> None:
    """pg-boss repeated reads created/retry jobs by (name, start_after) and active ones apart:
    within the window that is every unfinished job on a second or later try."""
    with pg_database(f"dbwq_backlog_pgboss_{uniq}") as conninfo, psycopg.connect(conninfo) as conn:
        conn.execute(PGBOSS)
        # pg-boss 10's layout (no `blocked`): the window in one job_i5 read; its active jobs
        # are the sweep's (probes/queue_pg_boss.py, tests/live/test_queue_pgboss_sweep.py), so
        # 10's own fragments leave them out: the query with its active part on is checked here
        frags = fragments({})
        assert frags["sweep"] == "true" and frags["active_scan"] == "false"
        text = compose("postgresql", sql("postgresql", "queue_pg_boss_repeated", PG15),
                       {"table": ("public", "job")}, frags | {"active_scan": "true"})
        plain = _rows(conn, "SELECT name, retry_count + 1, name, NULL::text, count(*) FROM job "
                      "WHERE state IN ('created', 'retry', 'active') AND retry_count > 0 "
                      "GROUP BY 1, 2, 3", 0)
        assert plain and _rows(conn, text, 1000) == plain
        waiting = compose("postgresql", sql("postgresql", "queue_pg_boss_repeated", PG15),
                          {"table": ("public", "job")}, frags)
        assert _rows(conn, waiting, 1000) == _rows(
            conn, "SELECT name, retry_count + 1, name, NULL::text, count(*) FROM job "
            "WHERE state IN ('created', 'retry') AND retry_count > 0 GROUP BY 1, 2, 3", 0)
        # a window of 10: at most 10 created/retry and 10 active jobs are counted
        assert 0 < sum(r[4] for r in _rows(conn, text, 10)) <= 20
