"""procrastinate 3.x (PyPI): `procrastinate_jobs` with `procrastinate_workers` (3.x heartbeats).

Stuck ("stalled"): a 'doing' job whose worker is gone — its worker row was pruned (worker_id
set NULL) or its last_heartbeat is older than stalled_worker_timeout (30 s). procrastinate
never re-runs such a job by itself: it stays 'doing' until someone retries it.
"""

from __future__ import annotations

from .base import Library, Shape, queue_library

JOBS = Shape(
    "procrastinate",
    "procrastinate",
    frozenset(
        {
            "id",
            "queue_name",
            "task_name",
            "lock",
            "queueing_lock",
            "args",
            "status",
            "attempts",
            "worker_id",
        }
    ),
    ("postgresql",),
    name_suffix="jobs",
    siblings=("workers", "events"),
)

# The library on the one queue model: role -> its column (sibling.column in a sibling
# table); docs/queues.md shows them side by side.
ROLES = {
    "job_id": "id",
    "queue": "queue_name",
    "job_type": "task_name",
    "payload": "args",
    "status": "status",
    "attempts": "attempts",
    "claimed_by": "worker_id",
    "runnable_at": "scheduled_at",
    "heartbeat": "workers.last_heartbeat",
}

LIBRARY = Library(
    roles=ROLES,
    name="procrastinate",
    title="procrastinate",
    versions="3.x (procrastinate_jobs with worker_id, procrastinate_workers heartbeats)",
    shapes=(JOBS,),
    table_names=frozenset({"procrastinate_jobs", "procrastinate_workers", "procrastinate_events"}),
    states={
        "available": "status = 'todo' AND (scheduled_at IS NULL OR scheduled_at <= now())",
        "claimed": "status = 'doing' (worker_id, its last_heartbeat)",
        "retrying": "status = 'todo' AND attempts > 0",
        "failed": "status = 'failed' (the error is in the worker's log, not the table)",
        "done": "status = 'succeeded' / 'cancelled' / 'aborted' (kept until deleted)",
    },
    stuck=(
        "stalled: 'doing' with its worker pruned (worker_id NULL) or its heartbeat older "
        "than stalled_worker_timeout (30 s); never re-run unless retried"
    ),
    backlog_fix=(
        "Check that a worker listens on the queue (procrastinate --app=<app> worker "
        "--queues=<queue>); raise --concurrency only when the database is healthy."
    ),
    expired_fix=(
        "These jobs are stalled: their worker died (OOM, SIGKILL, deploy) and procrastinate "
        "will not run them again by itself. Retry them: for job in await "
        "app.job_manager.get_stalled_jobs(): await app.job_manager.retry_job(job) "
        "(a periodic task doing this is the documented pattern); stop workers gracefully."
    ),
    expired_note=(
        "'doing' jobs whose worker has sent no heartbeat for over",
        "procrastinate never runs stalled jobs again unless they are retried",
    ),
    attempts_fix=(
        "Read the task's errors in the worker log; set retry=RetryStrategy(max_attempts=…, "
        "wait=…) on the task to what it needs."
    ),
    expiry_source="procrastinate stalled_worker_timeout (default 30 s)",
    gone_note="'doing' jobs whose worker row was pruned (worker_id set NULL)",
    failure_fix={
        "other": (
            "procrastinate keeps no error text in the database: read the worker log for the "
            "task, fix it, then retry: procrastinate --app=<app> shell, then retry <job id> "
            "(or app.job_manager.retry_job_by_id(<id>))."
        ),
    },
)
queue_library(LIBRARY)
