"""Oban from two clients on the local PostgreSQL. The Oban Python client (`oban` 0.7 on PyPI)
needs Python >= 3.12, which this machine lacks: its wheel is unpacked (.ci/run) and its OWN SQL
files drive the table (install.sql, insert_job.sql, fetch_jobs.sql, ack_job.sql) — the
`errors jsonb` column, its 300 s rescue and its fix words. Elixir's published DDL (`errors
jsonb[]`, rescue after 60 min) beside it keeps the other client exact."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from queue_libs import LIBS, audit, by_rule, pg_database, queue_findings

QUERIES = LIBS / "oban-py" / "oban" / "queries"


def _sql(name: str) -> str:
    """One of the client's own statements (its default prefix, public)."""
    return (QUERIES / name).read_text(encoding="utf-8")


def _insert(c: Any, queue: str, worker: str, n: int, max_attempts: int = 20,
            scheduled_ago: int | None = None) -> None:
    for _ in range(n):
        c.execute(_sql("insert_job.sql"), {
            "args": json.dumps({"to": "a@example.com"}), "inserted_at": None,
            "max_attempts": max_attempts, "meta": "{}", "priority": 0, "queue": queue,
            "scheduled_at": None if scheduled_ago is None else
            c.execute("SELECT timezone('UTC', now()) - make_interval(secs => %s)",
                      (scheduled_ago,)).fetchone()[0],
            "state": "available", "tags": [], "worker": worker})


def _fetch(c: Any, queue: str, demand: int) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = c.execute(
        _sql("fetch_jobs.sql"), {"queue": queue, "demand": demand,
                                 "attempted_by": ["node-1", "4f2a"]}).fetchall()
    return rows


# ElixirOban's migrations (v12): errors jsonb[], the rest as the Python client has it
ELIXIR_DDL = """
CREATE SCHEMA ex;
CREATE TYPE ex.oban_job_state AS ENUM ('available', 'scheduled', 'executing', 'retryable',
  'completed', 'discarded', 'cancelled');
CREATE TABLE ex.oban_jobs (id bigserial PRIMARY KEY, state ex.oban_job_state NOT NULL DEFAULT
  'available', queue text NOT NULL DEFAULT 'default', worker text NOT NULL, args jsonb NOT NULL
  DEFAULT '{}', errors jsonb[] NOT NULL DEFAULT ARRAY[]::jsonb[], attempt integer NOT NULL
  DEFAULT 0, max_attempts integer NOT NULL DEFAULT 20, inserted_at timestamp without time zone
  NOT NULL DEFAULT timezone('UTC', now()), scheduled_at timestamp without time zone NOT NULL
  DEFAULT timezone('UTC', now()), attempted_at timestamp without time zone, completed_at
  timestamp without time zone, attempted_by text[], discarded_at timestamp without time zone,
  priority integer NOT NULL DEFAULT 0, tags varchar(255)[] DEFAULT ARRAY[]::varchar[], meta jsonb
  DEFAULT '{}', cancelled_at timestamp without time zone);
"""


def test_oban_python_client_and_elixir_ddl(uniq: str) -> None:
    if not (QUERIES / "install.sql").is_file():
        pytest.skip(f"the oban Python client is not unpacked in {QUERIES} (.ci/run does it)")
    db = f"dbw_oban_{uniq}"
    with pg_database(db) as dsn:
        url = f"postgresql://postgres@127.0.0.1:5432/{db}"
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(_sql("install.sql"))
            _insert(c, "default", "app.workers.Welcome", 5)
            for job in _fetch(c, "default", 5):  # healthy: run and completed
                c.execute(_sql("ack_job.sql"), {"state": "completed", "schedule_in": None,
                          "attempt_change": None, "error": None, "meta": None, "id": job[0],
                          "attempted_at": job[13]})
            assert queue_findings(audit(url, "--select", "QU,DW")) == []
            _insert(c, "mail", "app.workers.Mailer", 300, scheduled_ago=7200)   # backlog 2 h
            _insert(c, "billing", "app.workers.Charge", 10, max_attempts=1)
            for job in _fetch(c, "billing", 10):  # out of attempts: discarded with its error
                err = {"attempt": 1, "at": "2026-01-01T00:00:00+00:00",
                       "error": "ValueError('card declined')\nTraceback ..."}
                c.execute(_sql("ack_job.sql"), {"state": "discarded", "schedule_in": None,
                          "attempt_change": None, "error": json.dumps(err), "meta": None,
                          "id": job[0], "attempted_at": job[13]})
            _insert(c, "reports", "app.workers.Export", 3)
            assert len(_fetch(c, "reports", 3)) == 3  # its worker is SIGKILLed: never acked
            # ten minutes later (past the Python client's 300 s rescue, before Elixir's hour)
            c.execute("UPDATE oban_jobs SET attempted_at = attempted_at - interval '10 min' "
                      "WHERE state = 'executing'")
            c.execute(ELIXIR_DDL)
            c.execute("INSERT INTO ex.oban_jobs (state, worker, attempt, max_attempts, errors,"
                      " attempted_at, discarded_at) SELECT 'discarded', 'MyApp.Sync', 3, 3,"
                      " ARRAY['{\"attempt\": 3, \"error\": \"** (RuntimeError) sync down\"}'::jsonb],"
                      " timezone('UTC', now()), timezone('UTC', now()) FROM generate_series(1, 4)")
            c.execute("INSERT INTO ex.oban_jobs (state, worker, attempt, attempted_at) SELECT"
                      " 'executing', 'MyApp.Long', 1, timezone('UTC', now()) - interval '10 min'"
                      " FROM generate_series(1, 2)")
        data = audit(url, "--select", "QU,DW")
    assert not by_rule(data, "DW001"), by_rule(data, "DW001")
    py = queue_findings(data, "public.oban_jobs")
    assert py and all(f["evidence"]["library"] == "oban" and f["evidence"]["client"] == "python"
                      for f in py)
    (backlog,) = [f for f in by_rule(data, "QU001") if f["evidence"]["table"] == "public.oban_jobs"]
    assert backlog["evidence"]["queue"] == "mail" and backlog["evidence"]["depth"] == 300
    (stuck,) = [f for f in by_rule(data, "QU002") if f["evidence"]["table"] == "public.oban_jobs"]
    assert stuck["evidence"]["count"] == 3 and stuck["evidence"]["retry_after_seconds"] == 300
    assert "rescue_after" in stuck["fix"] and ":timer" not in stuck["fix"]
    (failed,) = [f for f in by_rule(data, "QU004") if f["evidence"]["table"] == "public.oban_jobs"]
    assert failed["evidence"]["count"] == 10 and "card declined" in failed["evidence"]["message"]
    assert "oban.retry_job" in failed["fix"] and "errors[array_length" not in failed["fix"]
    ex = queue_findings(data, "ex.oban_jobs")
    assert all(f["evidence"]["client"] == "elixir" for f in ex)
    assert not [f for f in ex if f["rule"] == "QU002"]  # 10 min < Elixir's 60 min rescue
    (ex_failed,) = [f for f in ex if f["rule"] == "QU004"]
    assert ex_failed["evidence"]["count"] == 4 and "sync down" in ex_failed["evidence"]["message"]
    assert "Oban.retry_job" in ex_failed["fix"]

