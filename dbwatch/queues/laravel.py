"""Laravel's database queue (5.x–13.x): `jobs`, `failed_jobs`, `job_batches`, both engines.

Stuck: a job reserved longer than the connection's `retry_after` is handed to another worker.
The legacy claim indexes by release and the one fix for them (QU301 and the deadlock
diagnosis both print it) live here too.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from ..targets.quoting import my_ident, pg_ident_text
from .base import Library, Shape, queue_library

JOBS = Shape(
    "laravel_jobs",
    "laravel",
    frozenset({"id", "queue", "payload", "attempts", "reserved_at", "available_at", "created_at"}),
    kinds=(("reserved_at", "int"), ("available_at", "int")),
)
FAILED = Shape(
    "laravel_failed",
    "laravel",
    frozenset({"id", "connection", "queue", "payload", "exception", "failed_at"}),
)
BATCHES = Shape(
    "laravel_batches",
    "laravel",
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
)


def backlog_text(queue: str | None) -> str:
    """QU001 for one queue: queue:monitor takes `<connection>:<queue>`, the connection being
    the name in config/queue.php (dbwatch cannot see it, so it stays a placeholder)."""
    name = shlex.quote(" ".join(str(queue).split())[:100]) if queue else "<queue>"
    return (
        "Check the workers (supervisor/systemd: php artisan queue:work "
        f"--queue={name}); php artisan queue:monitor "
        f"<connection>:{name} --max=1000 alerts from the app (<connection>: the queue "
        "connection's name in config/queue.php, often database); add workers for this queue "
        "only when the database is healthy (QU402, MY101)."
    )


# The jobs table's claim index by release, as its columns: Laravel 5.1–5.2, 5.3–5.4 and
# 12.54 only; from 5.5 it is `(queue)`, and upgrades never replaced an existing one.
LEGACY_SHAPES = {
    ("queue", "reserved_at"): "Laravel 5.3–5.4",
    ("queue", "reserved", "reserved_at"): "Laravel 5.1–5.2",
    ("queue", "reserved_at", "available_at"): "Laravel 12.54",
}


def legacy_shape_of_name(index: str) -> tuple[str, ...] | None:
    """The legacy shape an index has by Laravel's own name for it
    (`<prefix><table>_<column>_…_index`), for readers that see only the name (a deadlock
    report); None when the name is not one Laravel gives a legacy index."""
    name = "_" + index.lower()
    return next((s for s in LEGACY_SHAPES if name.endswith("_" + "_".join(s) + "_index")), None)


def legacy_index_fix(
    engine: str, schema: str | None, table: str, indexes: Sequence[str], has_queue_index: bool
) -> str:
    """The SQL that replaces a jobs table's legacy indexes by Laravel's `(queue)` index with
    no moment without one: a single online ALTER on MySQL/MariaDB (it fails whole, dropping
    nothing, when the new name is taken), CREATE before DROP … CONCURRENTLY on PostgreSQL.
    No new index when `has_queue_index`; `schema` None: the table unqualified."""
    where = (schema,) if schema else ()
    new = f"{table}_queue_index"
    if engine == "postgresql":
        create = (
            ""
            if has_queue_index
            else f"CREATE INDEX CONCURRENTLY {pg_ident_text(new)} ON "
            f"{pg_ident_text(*where, table)} (queue); "
        )
        drops = " ".join(f"DROP INDEX CONCURRENTLY {pg_ident_text(*where, ix)};" for ix in indexes)
        return f"{create}{drops}"
    drops = ", ".join(f"DROP INDEX {my_ident(ix)}" for ix in indexes)
    add = "" if has_queue_index else f", ADD INDEX {my_ident(new)} (`queue`)"
    return f"ALTER TABLE {my_ident(*where, table)} {drops}{add}, ALGORITHM=INPLACE, LOCK=NONE;"


# The library on the one queue model: role -> its column (sibling.column in a sibling
# table); docs/queues.md shows them side by side.
ROLES = {
    "job_id": "id",
    "queue": "queue",
    "payload": "payload",
    "runnable_at": "available_at",
    "claimed_at": "reserved_at",
    "attempts": "attempts",
    "created_at": "created_at",
    "error": "failed_jobs.exception",
    "failed_at": "failed_jobs.failed_at",
}

LIBRARY = Library(
    roles=ROLES,
    name="laravel",
    title="Laravel",
    versions="5.1–13.x (database driver)",
    shapes=(JOBS, FAILED, BATCHES),
    table_names=frozenset({"jobs", "failed_jobs", "job_batches"}),
    states={
        "available": "reserved_at IS NULL AND available_at <= now",
        "claimed": "reserved_at IS NOT NULL",
        "retrying": "attempts > 1 (released or expired, waiting again)",
        "failed": "a row in failed_jobs",
        "done": "deleted",
    },
    stuck="reserved longer than the connection's retry_after: another worker runs it again",
    backlog_fix=backlog_text(None),
    backlog_text=backlog_text,
    expired_fix="",  # computed with the real retry_after and table (checks.queue_health)
    attempts_fix=(
        "Set the worker --timeout (or the job's $timeout) several seconds below retry_after; "
        "look for killed workers (dmesg | grep -i oom; deploys without php artisan "
        "queue:restart); make jobs idempotent."
    ),
    expiry_source="target retry_after",
    failure_meaning={
        "max_attempts": (
            "the job was handed to workers more times than its tries allow without "
            "finishing: usually killed by the worker --timeout (before Laravel 10.10 "
            "timeouts show up here as 'run too long'), a --timeout not shorter than "
            "retry_after so a second worker took it, OOM-killed or deploy-killed workers, "
            "a delete rolled back by a deadlock, or (SQS) the approximate receive count"
        ),
        "timeout": (
            "the job ran longer than its $timeout / the worker --timeout and was killed "
            "(Laravel 10.10+ records this separately from MaxAttemptsExceeded)"
        ),
        "deadlock": (
            "the queue's own statements deadlocked (SQLSTATE 40001 / 1213 on MySQL, 40P01 "
            "on PostgreSQL); since Laravel 12.54 a deadlock while reserving fails the job"
        ),
        "batch": (
            "jobs of this Laravel batch failed: without allowFailures() the batch is "
            "cancelled at the first failure and then() never runs; its pending_jobs stay"
        ),
    },
    failure_fix={
        "max_attempts": (
            "Set the worker --timeout (or the job's $timeout) several seconds below "
            "retry_after and retry_after above the slowest job; look for OOM kills "
            "(dmesg | grep -i oom) and --memory; stop workers gracefully in deploys "
            "(queue:restart); fix claim/delete deadlocks (SKIP LOCKED claims, the (queue) "
            "index); make jobs idempotent; then php artisan queue:retry <uuid>."
        ),
        "timeout": (
            "Raise the job's $timeout (keeping it below retry_after) or split the work; "
            "keep jobs idempotent, since a killed job may have done part of its work; "
            "then php artisan queue:retry <uuid>."
        ),
        "deadlock": (
            "Claim with FOR UPDATE SKIP LOCKED (MySQL 8.0.1+, MariaDB 10.6+), keep only "
            "the (queue) index on the jobs table, keep job transactions short; then "
            "php artisan queue:retry all."
        ),
        "lock_wait_timeout": (
            "Find the long lock holder (MY001/MY101, PG001/PG101) and shorten its "
            "transaction; claim with SKIP LOCKED; then php artisan queue:retry all."
        ),
        "batch": (
            "Read the batch's failures in failed_jobs (failed_job_ids holds their uuids), "
            "fix them, then php artisan queue:retry-batch <batch id>; use allowFailures() "
            "where a partial batch is acceptable."
        ),
        "other": (
            "Read the exception in failed_jobs (php artisan queue:failed) and fix the job; "
            "then php artisan queue:retry <uuid>."
        ),
    },
)
queue_library(LIBRARY)
