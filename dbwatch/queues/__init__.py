"""Job-queue tables, pure: recognise a table's library by its columns, read job classes and
payload timeouts from bounded text, and classify failure messages (Laravel and others).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass


# Libraries recognised by the columns they always have (lower-case names). Order matters:
# the first shape a table satisfies wins.
@dataclass(frozen=True)
class Shape:
    kind: str
    library: str
    columns: frozenset[str]
    engines: tuple[str, ...] = ("postgresql", "mysql")
    name_suffix: str = ""  # Solid Queue is recognised by name as well as columns
    # Sibling tables read with this one, named by replacing name_suffix (solid_queue_jobs ->
    # solid_queue_ready_executions; graphile _private_jobs -> _private_tasks).
    siblings: tuple[str, ...] = ()
    excludes: frozenset[str] = frozenset()  # a column that makes it another table (an archive)
    scale_depth: bool = True  # the table's row estimate is the queue (finished rows leave it)


SHAPES: tuple[Shape, ...] = (
    Shape(
        "laravel_jobs",
        "Laravel",
        frozenset(
            {"id", "queue", "payload", "attempts", "reserved_at", "available_at", "created_at"}
        ),
    ),
    Shape(
        "laravel_failed",
        "Laravel",
        frozenset({"id", "connection", "queue", "payload", "exception", "failed_at"}),
    ),
    Shape(
        "que",
        "Que",
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
    ),
    Shape(
        "good_job",
        "GoodJob",
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
    ),
    Shape(
        "delayed_job",
        "Delayed::Job",
        frozenset(
            {
                "id",
                "attempts",
                "handler",
                "last_error",
                "run_at",
                "locked_at",
                "failed_at",
                "locked_by",
                "queue",
            }
        ),
    ),
    Shape(
        "oban",
        "Oban",
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
    ),
    Shape(
        "river",
        "River",
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
    ),
    Shape(
        "solid_queue",
        "Solid Queue",
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
    ),
    Shape(
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
    ),
    Shape(
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
    ),
    Shape(
        "laravel_batches",
        "Laravel",
        frozenset(
            {
                "id",
                "name",
                "total_jobs",
                "pending_jobs",
                "failed_jobs",
                "failed_job_ids",
                "cancelled_at",
                "created_at",
                "finished_at",
            }
        ),
        scale_depth=False,
    ),
)

# Columns the discovery query returns (the union of the shapes' columns plus types we read).
MARKER_COLUMNS: tuple[str, ...] = tuple(
    sorted(
        set().union(*(s.columns | s.excludes for s in SHAPES))
        | {"uuid", "expire_in", "expire_seconds"}
    )
)


def recognise(columns: dict[str, str], engine: str, table: str = "") -> Shape | None:
    """The library shape a table's columns (and, where it has siblings, its name) match."""
    names = {c.lower() for c in columns}
    flavour = "postgresql" if engine == "postgresql" else "mysql"
    for shape in SHAPES:
        if flavour not in shape.engines or not shape.columns <= names or shape.excludes & names:
            continue
        if shape.name_suffix and not table.lower().endswith(shape.name_suffix):
            continue
        return shape
    return None


def sibling_names(shape: Shape, table: str) -> dict[str, str]:
    """Placeholder -> table name of the shape's sibling tables, in the same schema."""
    stem = table[: len(table) - len(shape.name_suffix)] if shape.name_suffix else table
    return {sib: stem + sib for sib in shape.siblings}


_INT_LIMITS = {
    "tinyint": 127,
    "smallint": 32767,
    "mediumint": 8388607,
    "int": 2147483647,
    "integer": 2147483647,
    "bigint": 2**63 - 1,
}


def attempts_limit(column_type: str | None) -> int | None:
    """The largest value an attempts column can hold: 'tinyint(3) unsigned' -> 255."""
    if not column_type:
        return None
    text = column_type.lower()
    base = re.match(r"[a-z]+", text)
    if base is None or base.group(0) not in _INT_LIMITS:
        return None
    limit = _INT_LIMITS[base.group(0)]
    return limit * 2 + 1 if "unsigned" in text else limit


def job_class(raw: str | None) -> str | None:
    """A class name cut out of JSON text by SQL: undo JSON escapes, never raise."""
    if raw is None:
        return None
    text = str(raw)[:255]
    try:
        value = json.loads(f'"{text}"')
    except (ValueError, TypeError):
        value = text.replace("\\\\", "\\").replace("\\/", "/")
    value = "".join(ch for ch in str(value) if ch.isprintable()).strip()
    return value or None


def payload_timeout(head: str | None) -> int | None:
    """Leading digits of what follows '"timeout":' in a payload (null/absent -> None)."""
    if head is None:
        return None
    m = re.match(r"\s*(\d{1,9})", str(head))
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Failure:
    exception: str  # exception class as written in the text
    kind: str  # max_attempts | timeout | deadlock | lock_wait_timeout | worker_lost
    # | batch | other
    variant: str  # which message version, for max_attempts


_MAX = "MaxAttemptsExceededException"
# Solid Queue fails (never re-runs) the claimed jobs of a worker that died or went silent.
_WORKER_LOST = ("ProcessPrunedError", "ProcessExitError", "ProcessMissingError")
BATCH_EXCEPTION = "Illuminate\\Bus\\Batch"  # the probe's label for a batch's failed jobs
_ELIXIR = re.compile(r"\*\* \(([\w.]{1,200})\) (.*)")
_KIND_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "deadlock",
        re.compile(
            r"SQLSTATE\[(40001|40P01)\]|\b1213\b.*deadlock|deadlock detected|"
            r"deadlock found",
            re.IGNORECASE,
        ),
    ),
    (
        "lock_wait_timeout",
        re.compile(
            r"\b1205\b.*lock wait timeout|lock wait timeout exceeded|"
            r"SQLSTATE\[55P03\]|canceling statement due to lock timeout",
            re.IGNORECASE,
        ),
    ),
)


def classify_failure(head: str | None) -> Failure:
    """Exception class and meaning of the first line of a failure text."""
    text = " ".join(str(head or "").split())[:400]
    elixir = _ELIXIR.match(text)  # Oban: "** (RuntimeError) message"
    if elixir:
        exc, message = elixir.group(1), elixir.group(2)
    else:
        exc, _, message = text.partition(": ")
    if not message or " " in exc or len(exc) > 200:
        exc, message = "(unknown)", text
    if _MAX in exc:
        if "run too long" in message:
            variant = "5.5-10.9"
        elif message.startswith("A queued job has been attempted too many times"):
            variant = "5.4"
        else:
            variant = "10.10+"
        return Failure(exc, "max_attempts", variant)
    if exc.endswith(_WORKER_LOST):
        return Failure(exc, "worker_lost", "")
    if exc == BATCH_EXCEPTION:
        return Failure(exc, "batch", "")
    if exc.endswith("TimeoutExceededException") or message.endswith("has timed out."):
        return Failure(exc, "timeout", "")
    for kind, pattern in _KIND_PATTERNS:
        if pattern.search(message):
            return Failure(exc, kind, "")
    return Failure(exc, "other", "")


MEANING = {
    "max_attempts": (
        "the job was handed to workers more times than its tries allow without finishing: "
        "usually killed by the worker --timeout (before Laravel 10.10 timeouts show up here as "
        "'run too long'), a --timeout not shorter than retry_after so a second worker took it, "
        "OOM-killed or deploy-killed workers, a delete rolled back by a deadlock, or (SQS) the "
        "approximate receive count"
    ),
    "timeout": (
        "the job ran longer than its $timeout / the worker --timeout and was killed "
        "(Laravel 10.10+ records this separately from MaxAttemptsExceeded)"
    ),
    "deadlock": (
        "the queue's own statements deadlocked (SQLSTATE 40001 / 1213 on MySQL, 40P01 on "
        "PostgreSQL); since Laravel 12.54 a deadlock while reserving fails the job"
    ),
    "lock_wait_timeout": (
        "a statement waited longer than innodb_lock_wait_timeout (1205) or "
        "lock_timeout: something held row locks on the queue or the job's "
        "tables for too long"
    ),
    "worker_lost": (
        "the worker running the job died or stopped sending heartbeats (OOM or "
        "SIGKILL, a deploy without a graceful stop, a hung or suspended host); Solid "
        "Queue fails such jobs and does not run them again"
    ),
    "batch": (
        "jobs of this Laravel batch failed: without allowFailures() the batch is "
        "cancelled at the first failure and then() never runs; its pending_jobs stay"
    ),
    "other": "the job threw this exception itself",
}

FIX = {
    "max_attempts": (
        "Set the worker --timeout (or the job's $timeout) several seconds below retry_after and "
        "retry_after above the slowest job; look for OOM kills (dmesg | grep -i oom) and "
        "--memory; stop workers gracefully in deploys (queue:restart); fix claim/delete "
        "deadlocks (SKIP LOCKED claims, the (queue) index); make jobs idempotent; then "
        "php artisan queue:retry <uuid>."
    ),
    "timeout": (
        "Raise the job's $timeout (keeping it below retry_after) or split the work; "
        "keep jobs idempotent, since a killed job may have done part of its work."
    ),
    "deadlock": (
        "Claim with FOR UPDATE SKIP LOCKED (MySQL 8.0.1+, MariaDB 10.6+), keep only the "
        "(queue) index on the jobs table, keep job transactions short; retry the "
        "failed jobs once fixed."
    ),
    "lock_wait_timeout": (
        "Find the long lock holder (MY001/MY101, PG001/PG101) and shorten its "
        "transaction; claim with SKIP LOCKED; then retry the failed jobs."
    ),
    "worker_lost": (
        "Find why workers die (dmesg | grep -i oom, deploy logs); stop them with "
        "TERM and a shutdown_timeout the jobs fit in; keep jobs idempotent; then "
        "retry the failed executions (Mission Control, or "
        "SolidQueue::FailedExecution#retry)."
    ),
    "batch": (
        "Read the batch's failures in failed_jobs (failed_job_ids holds their uuids), fix "
        "them, then php artisan queue:retry-batch <batch id>; use allowFailures() where "
        "a partial batch is acceptable."
    ),
    "other": "Read the exception in failed_jobs and fix the job; then retry it.",
}
