"""Que 1.x–2.x (que_jobs): read from its published DDL (no client here; schema-level tests).

Stuck: a job whose error_count grows, or expired (retries exhausted); Que's advisory locks are not read.
"""

from __future__ import annotations

from .base import Library, Shape, queue_library

SHAPE = Shape(
    "que",
    "que",
    frozenset(
        {
            "id",
            "job_class",
            "error_count",
            "run_at",
            "queue",
            "finished_at",
            "expired_at",
            "last_error_message",
        }
    ),
    ("postgresql",),
)

# The library on the one queue model: role -> its column (sibling.column in a sibling
# table); docs/queues.md shows them side by side.
ROLES = {
    "job_id": "id",
    "queue": "queue",
    "job_type": "job_class",
    "runnable_at": "run_at",
    "attempts": "error_count",
    "error": "last_error_message",
    "finished_at": "finished_at",
    "failed_at": "expired_at",
}

LIBRARY = Library(
    roles=ROLES,
    name="que",
    title="Que",
    versions="1.x–2.x (que_jobs)",
    shapes=(SHAPE,),
    table_names=frozenset(["que_jobs"]),
    states={
        "available": "finished_at, expired_at IS NULL AND run_at <= now() (advisory locks not read)",
        "claimed": "an advisory lock (not read: running jobs count as waiting)",
        "retrying": "error_count > 0",
        "failed": "expired_at set (retries exhausted)",
        "done": "finished_at set or deleted",
    },
    stuck="a job whose error_count grows, or expired (retries exhausted); Que's advisory locks are not read",
    backlog_fix="Check the que workers (bundle exec que) are running; raise --worker-count only when the database is healthy (PG201/PG202).",
    expired_fix="Que holds jobs by advisory lock: a dead worker's lock disappears with its session, so a job is never stuck reserved; check the workers' logs.",
    attempts_fix="Read last_error_message of the retried jobs; fix the job class; Que retries with backoff until maximum_retry_count.",
    failure_fix={
        "other": "Read last_error_message/last_error_backtrace (SELECT id, job_class, last_error_message FROM que_jobs WHERE expired_at IS NOT NULL), fix the job, then UPDATE que_jobs SET expired_at = NULL, error_count = 0 WHERE id = <id>;"
    },
)
queue_library(LIBRARY)
