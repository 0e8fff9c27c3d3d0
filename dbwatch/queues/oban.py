"""Oban (oban_jobs), from two clients: Elixir's published DDL (`errors jsonb[]`, Lifeline
rescue after 60 min) and the Oban Python client (`oban` on PyPI: `errors jsonb`, its Lifeline
rescues after 300 s). Which client made the table is read from the `errors` column's type.
"""

from __future__ import annotations

from .base import Library, Shape, Variant, queue_library

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
    typed=("errors",),
)

# The last error's text, by the type of `errors` (an array of maps either way).
_LAST_ERROR = {
    "elixir": "errors[array_length(errors, 1)] ->> 'error'",
    "python": "CASE WHEN jsonb_typeof(errors) = 'array' THEN errors -> -1 ->> 'error' END",
    "unknown": "NULL::text",
}
# Lifeline's rescue_after defaults: Oban.Plugins.Lifeline (Elixir) 60 min; oban/_lifeline.py
# (Python 0.7) `rescue_after: float = 300.0`. Unknown client: the shorter, and both are named.
RESCUE = {"elixir": 3600, "python": 300, "unknown": 300}


def client(columns: dict[str, str]) -> str:
    """Which client created the table: `errors jsonb[]` (Elixir) or `jsonb` (Python)."""
    kind = " ".join(columns.get("errors", "").lower().split())
    return {"jsonb[]": "elixir", "jsonb": "python"}.get(kind, "unknown")


def variant(columns: dict[str, str]) -> Variant:
    who = client(columns)
    return Variant(
        who,
        {"last_error": _LAST_ERROR[who], "rescue": str(RESCUE[who])},
        VARIANTS[who],
    )


_ELIXIR = {
    "backlog": "Check the Oban queues are running on a node (Oban.check_queue/1); raise the queue's limit only when the database is healthy.",
    "expired": "Enable the Lifeline plugin ({Oban.Plugins.Lifeline, rescue_after: :timer.minutes(30)}) so jobs of dead nodes are rescued; make workers idempotent; set timeout/1 in the worker.",
    "attempts": "Read the errors of the retried jobs (errors[]); fix the worker; max_attempts and backoff/1 in the worker bound retries.",
    "failure": "Read errors (SELECT id, worker, errors[array_length(errors,1)] FROM oban_jobs WHERE state = 'discarded'), fix the worker, then Oban.retry_job(<id>).",
    "expiry_source": "Oban (Elixir) Lifeline rescue_after default (60 min)",
}
_PYTHON = {
    "backlog": "Check the Oban Python workers are running (oban.check_queue('<queue>') on a node, the `oban` CLI process); raise the queue's limit only when the database is healthy.",
    "expired": "These jobs' worker is gone: the Python client's Lifeline (leader only) rescues them after rescue_after (default 300 s; Oban(lifeline={'rescue_after': ...})); check a leader is running, make workers idempotent and give them a timeout().",
    "attempts": "Read the errors of the retried jobs (errors -> -1 ->> 'error'); fix the worker; max_attempts and backoff() in the worker bound retries.",
    "failure": "Read errors (SELECT id, worker, errors -> -1 ->> 'error' FROM oban_jobs WHERE state = 'discarded'), fix the worker, then await oban.retry_job(<id>).",
    "expiry_source": "Oban Python client Lifeline rescue_after default (300 s)",
}
_EITHER = {
    "backlog": "Check the Oban queues are running on a node (Elixir: Oban.check_queue/1; Python: oban.check_queue('<queue>')).",
    "expired": "The table's client could not be told (errors is neither jsonb nor jsonb[]): Elixir's Lifeline rescues after 60 min (rescue_after), the Python client's after 300 s; enable Lifeline for your client and make workers idempotent.",
    "attempts": "Read the errors of the retried jobs; fix the worker; max_attempts bounds retries.",
    "failure": "Read errors of the discarded jobs, fix the worker, then retry them (Elixir: Oban.retry_job/1; Python: await oban.retry_job(<id>)).",
    "expiry_source": "Oban client unknown: Python client default (300 s); Elixir's is 60 min",
}
VARIANTS = {"elixir": _ELIXIR, "python": _PYTHON, "unknown": _EITHER}

LIBRARY = Library(
    name="oban",
    title="Oban",
    versions="2.x (oban_jobs; Elixir errors jsonb[], Python client errors jsonb)",
    shapes=(SHAPE,),
    table_names=frozenset(["oban_jobs", "oban_peers", "oban_producers", "oban_leaders"]),
    states={
        "available": "state IN ('available', 'scheduled'/'retryable' already due)",
        "claimed": "state = 'executing' (attempted_at)",
        "retrying": "state = 'retryable', attempt > 1",
        "failed": "state = 'discarded' (errors: jsonb[] in Elixir, a jsonb array in Python)",
        "done": "state = 'completed' / 'cancelled' (pruned)",
    },
    stuck="executing longer than Lifeline's rescue_after (Elixir 60 min, Python client 300 s): its node is gone; Lifeline rescues it",
    backlog_fix=_ELIXIR["backlog"],
    expired_fix=_ELIXIR["expired"],
    attempts_fix=_ELIXIR["attempts"],
    failure_fix={"other": _ELIXIR["failure"]},
    expiry_source=_ELIXIR["expiry_source"],
    variant=variant,
    variant_words=VARIANTS,
    roles={
        "job_id": "id",
        "queue": "queue",
        "payload": "args",
        "job_type": "worker",
        "status": "state",
        "runnable_at": "scheduled_at",
        "claimed_at": "attempted_at",
        "claimed_by": "attempted_by",
        "attempts": "attempt",
        "max_attempts": "max_attempts",
        "finished_at": "completed_at",
        "failed_at": "discarded_at",
        "error": "errors",
        "priority": "priority",
        "created_at": "inserted_at",
    },
)
queue_library(LIBRARY)
