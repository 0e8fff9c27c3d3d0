"""pgqueuer (PyPI, 0.x–1.x): `pgqueuer` (queued and picked jobs) and `pgqueuer_log` (outcomes).

Stuck: a 'picked' job whose heartbeat is older than the consumer's heartbeat_timeout
(30 s by default in 1.x; retry_timer in 0.x): its consumer died, another consumer re-picks it.
"""

from __future__ import annotations

from .base import Library, Shape, queue_library

JOBS = Shape(
    "pgqueuer",
    "pgqueuer",
    frozenset(
        {"id", "priority", "queue_manager_id", "heartbeat", "execute_after", "status", "entrypoint"}
    ),
    ("postgresql",),
)
LOG = Shape(
    "pgqueuer_log",
    "pgqueuer",
    frozenset({"id", "created", "job_id", "status", "priority", "entrypoint", "traceback"}),
    ("postgresql",),
)

# The library on the one queue model: role -> its column (sibling.column in a sibling
# table); docs/queues.md shows them side by side.
ROLES = {
    "job_id": "id",
    "queue": "entrypoint",
    "status": "status",
    "runnable_at": "execute_after",
    "heartbeat": "heartbeat",
    "claimed_by": "queue_manager_id",
    "priority": "priority",
    "error": "pgqueuer_log.traceback",
}

LIBRARY = Library(
    roles=ROLES,
    name="pgqueuer",
    title="pgqueuer",
    versions="0.x–1.x (pgqueuer, pgqueuer_log)",
    shapes=(JOBS, LOG),
    table_names=frozenset({"pgqueuer", "pgqueuer_log", "pgqueuer_statistics"}),
    states={
        "available": "status = 'queued' AND execute_after <= now()",
        "claimed": "status = 'picked' (queue_manager_id, heartbeat)",
        "retrying": "attempts > 0 (1.x), or re-picked after a stale heartbeat",
        "failed": "pgqueuer_log status 'exception' / 'failed' (traceback), or 'failed' held in pgqueuer",
        "done": "deleted from pgqueuer, 'successful' in pgqueuer_log",
    },
    stuck="'picked' with a heartbeat older than heartbeat_timeout: the consumer died",
    backlog_fix=(
        "Check that a consumer runs the entrypoint (pgq run <module:factory>); raise "
        "concurrency_limit / batch_size only when the database is healthy."
    ),
    expired_fix=(
        "The consumer that picked these jobs stopped heartbeating (died, OOM, blocked event "
        "loop): another consumer re-picks them after heartbeat_timeout; find why it died, "
        "keep entrypoints idempotent, and do not block the event loop in async entrypoints."
    ),
    expired_note=(
        "picked jobs with no heartbeat for over",
        "their consumer is gone; another consumer will pick them again",
    ),
    attempts_fix="Read the tracebacks in pgqueuer_log; fix the entrypoint.",
    expiry_source="pgqueuer heartbeat_timeout (default 30 s)",
    failure_fix={
        "other": (
            "Read the traceback (SELECT job_id, entrypoint, traceback FROM pgqueuer_log WHERE "
            "status IN ('exception', 'failed') ORDER BY id DESC LIMIT 20), fix the entrypoint, "
            "then enqueue the job again (Queries.enqueue)."
        ),
    },
)
queue_library(LIBRARY)
