"""Solid Queue 0.x–1.x (solid_queue_* tables): read from its published DDL (no client here; schema-level tests).

Stuck: claimed by a process whose last_heartbeat_at is older than process_alive_threshold: Solid Queue prunes it and fails the job (ProcessPrunedError).
"""

from __future__ import annotations

from .base import Library, Shape, queue_library

SHAPE = Shape(
    "solid_queue",
    "solid-queue",
    frozenset(
        {
            "id",
            "queue_name",
            "class_name",
            "arguments",
            "priority",
            "active_job_id",
            "scheduled_at",
            "finished_at",
            "concurrency_key",
        }
    ),
    name_suffix="jobs",
    siblings=(
        "ready_executions",
        "scheduled_executions",
        "claimed_executions",
        "failed_executions",
        "processes",
    ),
    scale_depth=False,
)

# The library on the one queue model: role -> its column (sibling.column in a sibling
# table); docs/queues.md shows them side by side.
ROLES = {
    "job_id": "id",
    "queue": "queue_name",
    "job_type": "class_name",
    "payload": "arguments",
    "runnable_at": "scheduled_at",
    "priority": "priority",
    "finished_at": "finished_at",
    "claimed_at": "claimed_executions.created_at",
    "claimed_by": "claimed_executions.process_id",
    "heartbeat": "processes.last_heartbeat_at",
    "error": "failed_executions.error",
}

LIBRARY = Library(
    roles=ROLES,
    name="solid-queue",
    title="Solid Queue",
    versions="0.x–1.x (solid_queue_* tables)",
    shapes=(SHAPE,),
    table_names=frozenset(
        [
            "solid_queue_blocked_executions",
            "solid_queue_claimed_executions",
            "solid_queue_failed_executions",
            "solid_queue_jobs",
            "solid_queue_processes",
            "solid_queue_ready_executions",
            "solid_queue_scheduled_executions",
        ]
    ),
    states={
        "available": "a row in solid_queue_ready_executions (and due scheduled executions)",
        "claimed": "a row in solid_queue_claimed_executions (process_id)",
        "retrying": "Active Job executions > 0 in arguments",
        "failed": "a row in solid_queue_failed_executions",
        "done": "finished_at set (or deleted)",
    },
    stuck="claimed by a process whose last_heartbeat_at is older than process_alive_threshold: Solid Queue prunes it and fails the job (ProcessPrunedError)",
    backlog_fix="Check bin/jobs (the supervisor) is running; raise threads/processes in config/queue.yml only when the database is healthy; Mission Control shows the queues.",
    expired_fix="Find why workers stop heartbeating (OOM kills: dmesg | grep -i oom; hosts suspended; deploys that SIGKILL): stop workers with TERM and a shutdown_timeout the jobs fit in; check solid_queue_processes for stale last_heartbeat_at; retry the failed executions once fixed.",
    attempts_fix="Read the failures (Mission Control); tune retry_on in the job class.",
    failure_fix={
        "worker_lost": (
            "Find why workers die (dmesg | grep -i oom, deploy logs); stop them with "
            "TERM and a shutdown_timeout the jobs fit in; keep jobs idempotent; then "
            "retry the failed executions (Mission Control, or "
            "SolidQueue::FailedExecution#retry)."
        ),
        "other": "Read the error in solid_queue_failed_executions (Mission Control), fix the job, then SolidQueue::FailedExecution.find(<id>).retry (or retry from Mission Control).",
    },
    failure_meaning={
        "worker_lost": (
            "the worker running the job died or stopped sending heartbeats (OOM or "
            "SIGKILL, a deploy without a graceful stop, a hung or suspended host); Solid "
            "Queue fails such jobs and does not run them again"
        ),
    },
    expired_note=(
        "claimed jobs whose worker has sent no heartbeat for over",
        (
            "Solid Queue will prune the worker and fail these jobs with "
            "ProcessPrunedError; they do not run again unless retried"
        ),
    ),
)
queue_library(LIBRARY)
