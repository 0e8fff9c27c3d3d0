"""River 0.x (river_job): read from its published DDL (no client here; schema-level tests).

Stuck: running longer than the rescuer's RescueStuckJobsAfter (default 1 h): the rescuer retries or discards it.
"""

from __future__ import annotations

from .base import Library, Shape, queue_library

SHAPE = Shape(
    "river",
    "river",
    frozenset(
        {
            "id",
            "state",
            "attempt",
            "max_attempts",
            "attempted_at",
            "created_at",
            "finalized_at",
            "scheduled_at",
            "kind",
            "queue",
            "errors",
        }
    ),
    ("postgresql",),
)

# The library on the one queue model: role -> its column (sibling.column in a sibling
# table); docs/queues.md shows them side by side.
ROLES = {
    "job_id": "id",
    "queue": "queue",
    "job_type": "kind",
    "status": "state",
    "runnable_at": "scheduled_at",
    "claimed_at": "attempted_at",
    "attempts": "attempt",
    "max_attempts": "max_attempts",
    "finished_at": "finalized_at",
    "error": "errors",
    "created_at": "created_at",
}

LIBRARY = Library(
    roles=ROLES,
    name="river",
    title="River",
    versions="0.x (river_job)",
    shapes=(SHAPE,),
    table_names=frozenset(["river_job", "river_leader", "river_queue"]),
    states={
        "available": "state IN ('available', 'scheduled'/'retryable' already due)",
        "claimed": "state = 'running' (attempted_at)",
        "retrying": "state = 'retryable', attempt > 1",
        "failed": "state = 'discarded' (errors[])",
        "done": "state = 'completed' / 'cancelled'",
    },
    stuck="running longer than the rescuer's RescueStuckJobsAfter (default 1 h): the rescuer retries or discards it",
    backlog_fix="Check River clients are working the queue (Client.Start with Queues config); raise MaxWorkers only when the database is healthy.",
    expired_fix="River's rescuer retries jobs running longer than RescueStuckJobsAfter; set Timeout on the worker and find the client that died; make workers idempotent.",
    attempts_fix="Read errors of the retried jobs; fix the worker; MaxAttempts and NextRetry bound retries.",
    failure_fix={
        "other": "Read errors (SELECT id, kind, errors[array_length(errors,1)] FROM river_job WHERE state = 'discarded'), fix the worker, then client.JobRetry(ctx, <id>) (or the River UI)."
    },
)
queue_library(LIBRARY)
