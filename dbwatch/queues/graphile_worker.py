"""graphile-worker 0.14+ (`_private_jobs` with `_private_tasks` / `_private_job_queues`).

Stuck: a job lock or a named-queue lock older than the worker could hold it; graphile-worker
itself releases locks only after 4 hours. A named queue locked by a dead worker blocks every
job of that queue: no other worker runs them.
"""

from __future__ import annotations

from .base import Library, Shape, queue_library

JOBS = Shape(
    "graphile_worker",
    "graphile-worker",
    frozenset(
        {
            "id",
            "job_queue_id",
            "task_id",
            "payload",
            "run_at",
            "attempts",
            "max_attempts",
            "last_error",
            "locked_at",
            "locked_by",
        }
    ),
    ("postgresql",),
    name_suffix="jobs",
    siblings=("tasks", "job_queues"),
)

UNLOCK = "SELECT graphile_worker.force_unlock_workers(ARRAY[{workers}]);"

# The library on the one queue model: role -> its column (sibling.column in a sibling
# table); docs/queues.md shows them side by side.
ROLES = {
    "job_id": "id",
    "queue": "job_queues.queue_name",
    "job_type": "tasks.identifier",
    "payload": "payload",
    "runnable_at": "run_at",
    "claimed_at": "locked_at",
    "claimed_by": "locked_by",
    "attempts": "attempts",
    "max_attempts": "max_attempts",
    "error": "last_error",
}

LIBRARY = Library(
    roles=ROLES,
    name="graphile-worker",
    title="graphile-worker",
    versions="0.14+ (_private_jobs, _private_job_queues, _private_tasks)",
    shapes=(JOBS,),
    table_names=frozenset({"_private_jobs", "_private_job_queues", "_private_tasks", "jobs"}),
    states={
        "available": "locked_at IS NULL AND attempts < max_attempts AND run_at <= now()",
        "claimed": "locked_at IS NOT NULL (locked_by = worker id); named queue locked too",
        "retrying": "attempts > 0, last_error set, run_at in the future (backoff)",
        "failed": "attempts >= max_attempts (kept with last_error)",
        "done": "deleted",
    },
    stuck=(
        "a job or named queue locked by a worker that is gone: graphile-worker frees the "
        "lock only after 4 hours, and a locked named queue runs none of its jobs until then"
    ),
    backlog_fix=(
        "Check the workers are running (graphile-worker --once to test); raise "
        "concurrency (-j / worker.concurrentJobs) only when the database is healthy."
    ),
    expired_fix=(
        "Find the worker that died holding the lock (locked_by names it); if it is gone, "
        "SELECT graphile_worker.force_unlock_workers(ARRAY['<worker id>']); frees its jobs "
        "and queues at once; keep tasks idempotent."
    ),
    expired_note=(
        "jobs locked by a worker for longer than",
        (
            "graphile-worker frees such a lock only 4 h after it was taken: if that worker "
            "is gone, nobody runs these jobs until then"
        ),
    ),
    attempts_fix=(
        "Read last_error of the retried jobs (graphile_worker.jobs view); fix the task; "
        "graphile_worker.reschedule_jobs(ARRAY[ids], run_at := now()) to retry at once."
    ),
    failure_fix={
        "other": (
            "Read last_error (SELECT id, task_identifier, last_error FROM "
            "graphile_worker.jobs WHERE attempts >= max_attempts), fix the task, then "
            "SELECT graphile_worker.reschedule_jobs(ARRAY[<ids>], run_at := now(), "
            "attempts := 0);"
        ),
    },
)
queue_library(LIBRARY)
