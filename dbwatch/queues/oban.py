"""Oban 2.x (oban_jobs): read from its published DDL (no client here; schema-level tests).

Stuck: executing longer than the Lifeline/rescue_after: its node is gone; Oban's Lifeline plugin rescues it.
"""

from __future__ import annotations

from .base import Library, Shape

SHAPE = Shape(
    "oban",
    "oban",
    frozenset(
        {
            "id",
            "state",
            "queue",
            "worker",
            "errors",
            "attempt",
            "max_attempts",
            "inserted_at",
            "scheduled_at",
            "attempted_at",
            "discarded_at",
        }
    ),
    ("postgresql",),
)

LIBRARY = Library(
    name="oban",
    title="Oban",
    versions="2.x (oban_jobs)",
    shapes=(SHAPE,),
    table_names=frozenset(["oban_jobs", "oban_peers", "oban_producers"]),
    states={
        "available": "state IN ('available', 'scheduled'/'retryable' already due)",
        "claimed": "state = 'executing' (attempted_at)",
        "retrying": "state = 'retryable', attempt > 1",
        "failed": "state = 'discarded' (errors[])",
        "done": "state = 'completed' / 'cancelled' (pruned)",
    },
    stuck="executing longer than the Lifeline/rescue_after: its node is gone; Oban's Lifeline plugin rescues it",
    backlog_fix="Check the Oban queues are running on a node (Oban.check_queue/1); raise the queue's limit only when the database is healthy.",
    expired_fix="Enable the Lifeline plugin ({Oban.Plugins.Lifeline, rescue_after: :timer.minutes(30)}) so jobs of dead nodes are rescued; make workers idempotent; set timeout/1 in the worker.",
    attempts_fix="Read the errors of the retried jobs (errors[]); fix the worker; max_attempts and backoff/1 in the worker bound retries.",
    failure_fix={
        "other": "Read errors (SELECT id, worker, errors[array_length(errors,1)] FROM oban_jobs WHERE state = 'discarded'), fix the worker, then Oban.retry_job(<id>)."
    },
)
