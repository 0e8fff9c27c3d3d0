"""pg-boss 10–12 (`<schema>.job`, `name` is the queue; the `archive` table is not read).

Stuck: an active job past its own expiration (expire_in / expire_seconds, per job) — and in 12,
a job whose heartbeat (heartbeat_on + heartbeat_seconds) went stale: its worker is gone and
pg-boss's supervisor fails it ("job heartbeat timeout") and retries it while retries are left.
"""

from __future__ import annotations

from .base import Library, Shape, queue_library

JOB = Shape(
    "pg_boss",
    "pg-boss",
    frozenset(
        {
            "id",
            "name",
            "state",
            "retry_limit",
            "retry_count",
            "start_after",
            "started_on",
            "completed_on",
            "keep_until",
            "output",
        }
    ),
    ("postgresql",),
    excludes=frozenset({"archived_on"}),
    scale_depth=False,
    typed=("expire_in", "expire_seconds", "heartbeat_seconds"),
)

# QU002 when the expired claims are pg-boss 12 heartbeats: the worker is gone, not slow.
HEARTBEAT_FIX = (
    "The worker that fetched these jobs stopped heartbeating: it died (OOM: dmesg | grep -i "
    "oom; a deploy that SIGKILLs) or hangs. pg-boss's supervisor fails them as 'job heartbeat "
    "timeout' and retries them while retryLimit allows; stop workers with "
    "boss.stop({ graceful: true }), make handlers idempotent, then boss.retry(name, ids) for "
    "what failed for good."
)

# How the waiting jobs' window is read, by the indexes of the version (queue_pg_boss_*.sql):
# pg-boss 12 (a `blocked` column; job_i14 on (name, state, blocked, start_after)) queue by
# queue, one ordered range per state and blocked, the next queue by job_i11 / job_i14 probes; 10/11 (job_i5 on (name, start_after) WHERE
# state < 'active') in one ordered read. Both hold the same rows: the first `window` created/
# retry jobs in (name, start_after) order.
WAITING_BY_QUEUE = {
    "by_queue": "true",
    "unblocked": "state < 'active' AND NOT blocked",  # job_i11: the next queue with one
    "created": "state = 'created' AND NOT blocked",
    "created_blocked": "state = 'created' AND blocked",
    "retry": "state = 'retry' AND NOT blocked",
    "retry_blocked": "state = 'retry' AND blocked",
}
WAITING_AT_ONCE = dict.fromkeys(WAITING_BY_QUEUE, "false")
# Reads of failed jobs (queue_pg_boss_failed.sql): pg-boss 10/11 have no index on them, so every
# row is read; OFFSET 0 keeps completed_on out of the scan's filter (each row decoded up to
# `state`, its 5th column, not the 16th). 12 reads them through job_i14/job_i16: no fence.
FENCE = {True: "", False: "OFFSET 0"}
# The summary's active half (queue_pg_boss_summary.sql): 12 reads it there through job_i14;
# 10/11 have no index on active jobs, so they are read once, by the sweep (every one, for
# QU002), and the summary leaves its reserved count NULL for the check to take from there.


def fragments(columns: dict[str, str]) -> dict[str, str]:
    """The SQL fragments of the table's version (see WAITING_BY_QUEUE and FENCE)."""
    indexed = "blocked" in columns
    return dict(WAITING_BY_QUEUE if indexed else WAITING_AT_ONCE) | {
        "fence": FENCE[indexed],
        "active_read": "true" if indexed else "false",
        # 10/11: the sweep (probes/queue_pg_boss.py) reads active and failed jobs in one pass
        # for QU002, QU004 and the repeated query's active share, which it then leaves out
        "sweep": "false" if indexed else "true",
        "active_scan": "true" if indexed else "false",
    }


# The library on the one queue model: role -> its column (sibling.column in a sibling
# table); docs/queues.md shows them side by side.
ROLES = {
    "job_id": "id",
    "queue": "name",
    "status": "state",
    "runnable_at": "start_after",
    "claimed_at": "started_on",
    "attempts": "retry_count",
    "max_attempts": "retry_limit",
    "finished_at": "completed_on",
    "error": "output",
    "timeout": "expire_seconds",
    "heartbeat": "heartbeat_on",
}

LIBRARY = Library(
    roles=ROLES,
    name="pg-boss",
    title="pg-boss",
    versions="10.x (expire_in), 11.x (expire_seconds), 12.x (heartbeat_on/heartbeat_seconds)",
    shapes=(JOB,),
    table_names=frozenset({"job"}),
    fragments=fragments,
    states={
        "available": "state IN ('created', 'retry') AND start_after <= now()",
        "claimed": "state = 'active' (started_on; 12: heartbeat_on)",
        "retrying": "state = 'retry', retry_count > 0",
        "failed": "state = 'failed' (output holds the error)",
        "done": "state = 'completed' / 'cancelled' (kept until deletion, then archived)",
    },
    stuck=(
        "active past the job's expiration (expireInSeconds); 12: heartbeat_on older than "
        "heartbeatSeconds (the worker died: the supervisor fails it with 'job heartbeat timeout')"
    ),
    backlog_fix=(
        "Check that a worker is subscribed to the queue (boss.work(name, …)) and running; "
        "boss.getQueueStats(name) (11+: getQueue) shows queued/active counts; raise the "
        "worker's batchSize / localConcurrency only when the database is healthy (PG201/PG202)."
    ),
    expired_fix=(
        "Raise expireInSeconds (queue or send options) for jobs that legitimately run longer, "
        "or find the worker that died mid-job (OOM, deploy); in 12 give long jobs "
        "heartbeatSeconds so a dead worker is noticed in seconds; make handlers idempotent, "
        "since pg-boss retries failed jobs while retryLimit allows (boss.retry(name, id))."
    ),
    expired_note=(
        "active jobs past their expiration of",
        "pg-boss will fail them as timed out and retry them while retries are left",
    ),
    attempts_fix=(
        "Read the failures in output (boss.getJobById(name, id)); set retryLimit / "
        "retryDelay / retryBackoff on the queue (boss.updateQueue) to what the handler needs."
    ),
    expiry_source="job expire_seconds / expire_in",
    failure_texts=(
        ("job heartbeat timeout", "worker_lost"),
        ("job timed out", "timeout"),
        ("job failed by timeout in active state", "timeout"),
        ("handler execution exceeded", "timeout"),
    ),
    failure_meaning={
        "worker_lost": (
            "pg-boss failed the job itself: its heartbeat went stale (heartbeatSeconds), "
            "so the worker running it died or hung"
        ),
        "timeout": (
            "pg-boss failed the job itself: it stayed active past expireInSeconds (the "
            "worker died, hung or the handler is slower than its expiry)"
        ),
    },
    failure_fix={
        "worker_lost": (
            "Find why the worker died (OOM: dmesg | grep -i oom, deploys that SIGKILL); "
            "stop workers with boss.stop({ graceful: true }); then boss.retry(name, ids)."
        ),
        "timeout": (
            "Raise expireInSeconds for this queue (boss.updateQueue(name, { expireInSeconds "
            "})) or split the work; make the handler idempotent; then boss.retry(name, ids)."
        ),
        "other": (
            "Read the error in output (boss.getJobById(name, id)), fix the handler, then "
            "boss.retry(name, ids)."
        ),
    },
)
queue_library(LIBRARY)
