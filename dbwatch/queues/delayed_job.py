"""Delayed::Job 3.x–4.x (delayed_jobs): read from its published DDL (no client here; schema-level tests).

Stuck: locked longer than Delayed::Worker.max_run_time (default 4 h): another worker takes it.
"""

from __future__ import annotations

from .base import Library, Shape, queue_library

SHAPE = Shape(
    "delayed_job",
    "delayed_job",
    frozenset(
        {
            "id",
            "attempts",
            "handler",
            "last_error",
            "run_at",
            "locked_at",
            "failed_at",
            "locked_by",
            "queue",
        }
    ),
)

# The library on the one queue model: role -> its column (sibling.column in a sibling
# table); docs/queues.md shows them side by side.
ROLES = {
    "job_id": "id",
    "queue": "queue",
    "payload": "handler",
    "runnable_at": "run_at",
    "claimed_at": "locked_at",
    "claimed_by": "locked_by",
    "attempts": "attempts",
    "failed_at": "failed_at",
    "error": "last_error",
}

LIBRARY = Library(
    roles=ROLES,
    name="delayed_job",
    title="Delayed::Job",
    versions="3.x–4.x (delayed_jobs)",
    shapes=(SHAPE,),
    table_names=frozenset(["delayed_jobs"]),
    states={
        "available": "locked_at IS NULL AND failed_at IS NULL AND run_at <= now",
        "claimed": "locked_at / locked_by set",
        "retrying": "attempts > 0",
        "failed": "failed_at set",
        "done": "deleted",
    },
    stuck="locked longer than Delayed::Worker.max_run_time (default 4 h): another worker takes it",
    backlog_fix="Check the workers (bin/delayed_job status) are running; add workers (bin/delayed_job -n) only when the database is healthy.",
    expired_fix="Find the worker in locked_by that died; lower Delayed::Worker.max_run_time to what jobs need; make jobs idempotent, since expired locks are taken again.",
    attempts_fix="Read last_error of the retried jobs; fix the job; Delayed::Worker.max_attempts bounds the retries.",
    failure_fix={
        "other": "Read last_error (SELECT id, attempts, last_error FROM delayed_jobs WHERE failed_at IS NOT NULL), fix the job, then Delayed::Job.find(<id>).update(failed_at: nil, attempts: 0, run_at: Time.now)."
    },
)
queue_library(LIBRARY)
