"""GoodJob 1.x–4.x (good_jobs): read from its published DDL (no client here; schema-level tests).

Stuck: executions_count growing, or finished with an error (discarded).
"""

from __future__ import annotations

from .base import Library, Shape, queue_library

SHAPE = Shape(
    "good_job",
    "good_job",
    frozenset(
        {
            "id",
            "queue_name",
            "serialized_params",
            "scheduled_at",
            "performed_at",
            "finished_at",
            "error",
            "executions_count",
            "created_at",
        }
    ),
    ("postgresql",),
)

# The library on the one queue model: role -> its column (sibling.column in a sibling
# table); docs/queues.md shows them side by side.
ROLES = {
    "job_id": "id",
    "queue": "queue_name",
    "payload": "serialized_params",
    "runnable_at": "scheduled_at",
    "claimed_at": "performed_at",
    "attempts": "executions_count",
    "finished_at": "finished_at",
    "error": "error",
    "created_at": "created_at",
}

LIBRARY = Library(
    roles=ROLES,
    name="good_job",
    title="GoodJob",
    versions="1.x–4.x (good_jobs)",
    shapes=(SHAPE,),
    table_names=frozenset(["good_job_executions", "good_job_processes", "good_jobs"]),
    states={
        "available": "performed_at IS NULL AND finished_at IS NULL AND scheduled_at <= now()",
        "claimed": "performed_at set, finished_at NULL (advisory lock)",
        "retrying": "executions_count > 1",
        "failed": "finished_at set with error",
        "done": "finished_at set, error NULL",
    },
    stuck="executions_count growing, or finished with an error (discarded)",
    backlog_fix="Check the GoodJob workers (bundle exec good_job start) are running; raise GOOD_JOB_MAX_THREADS only when the database is healthy.",
    expired_fix="GoodJob holds jobs by advisory lock; a dead worker's lock disappears with its session; check good_job_processes and the workers' logs.",
    attempts_fix="Read the error of the retried jobs (GoodJob dashboard, good_jobs.error); fix the job; tune retry_on in the job class.",
    failure_fix={
        "other": "Read the error (GoodJob dashboard or good_jobs.error), fix the job, then GoodJob::Job.find(<id>).retry_job (or retry from the dashboard)."
    },
)
queue_library(LIBRARY)
