"""Job-queue libraries: ONE registry of what a queue table is (one module per library).

`recognise` reads a table's columns (the probe's catalog query). For code that only has a
name (deadlock texts, statement logs and digests, PG202's tightening), by name alone:
`is_queue_table` (a library's default table), `is_job_table` (a table jobs are claimed from)
and `is_queue_like` (any table of a queue, by its words).
"""

from __future__ import annotations

import re

from .base import LIBRARIES, Library, Shape
from .failures import BATCH_EXCEPTION, FIX, MEANING, Failure, classify_failure
from .roles import ROLE_COLUMNS, type_kind
from .text import attempts_limit, job_class, payload_timeout

__all__ = [
    "BATCH_EXCEPTION",
    "CATALOG_COLUMNS",
    "FIX",
    "GENERIC_QUEUE_NAMES",
    "JOB_TABLE_NAMES",
    "LIBRARIES",
    "MARKER_COLUMNS",
    "MEANING",
    "QUEUE_DEAD_WITHOUT_HOLDER",
    "QUEUE_NAME_PATTERN",
    "QUEUE_TABLE_NAMES",
    "SHAPES",
    "Failure",
    "Library",
    "Shape",
    "attempts_limit",
    "classify_failure",
    "failure_fix",
    "failure_meaning",
    "is_job_table",
    "is_queue_like",
    "is_queue_table",
    "job_class",
    "library",
    "library_family",
    "payload_timeout",
    "recognise",
    "sibling_names",
]

# The library modules register themselves (queues/base.py: LIBRARIES, in recognition order);
# the names below are derived from them, so they are imported with this package.
LIBRARIES.load()
# The recognition order of the shapes: the first shape a table satisfies wins (more specific
# shapes first; Laravel's batches last).
_ORDER = (
    "laravel_jobs",
    "laravel_failed",
    "que",
    "good_job",
    "delayed_job",
    "oban",
    "river",
    "solid_queue",
    "graphile_worker",
    "pg_boss",
    "procrastinate",
    "pgqueuer",
    "pgqueuer_log",
    "symfony_messenger",
    "laravel_batches",
)
_SHAPES = {s.kind: s for lib in LIBRARIES.values() for s in lib.shapes}
SHAPES: tuple[Shape, ...] = tuple(_SHAPES[k] for k in _ORDER)

# Columns the discovery query returns (the union of the shapes' columns plus types we read).
MARKER_COLUMNS: tuple[str, ...] = tuple(
    sorted(
        set().union(*(s.columns | s.excludes | set(s.typed) for s in SHAPES))
        | {"uuid", "expire_in", "expire_seconds", "heartbeat_on", "heartbeat_seconds"}
    )
)

# What the queue catalog query asks for: the library markers and the queue model's role names.
CATALOG_COLUMNS: tuple[str, ...] = tuple(sorted(set(MARKER_COLUMNS) | ROLE_COLUMNS))

# Default table names of every library (lower case), for code that has only a name.
QUEUE_TABLE_NAMES: frozenset[str] = frozenset().union(
    *(lib.table_names for lib in LIBRARIES.values())
)
_LIB_OF_NAME: dict[str, str] = {}
for _lib in reversed(tuple(LIBRARIES.values())):  # the first library listing a name wins
    for _name in _lib.table_names:
        _LIB_OF_NAME[_name] = _lib.name
# The libraries' tables jobs are claimed from (locking reads, reservations, deletes): the
# others hold failures, batches, processes or logs.
JOB_TABLE_NAMES: frozenset[str] = frozenset(
    {
        "jobs",
        "job",
        "que_jobs",
        "good_jobs",
        "delayed_jobs",
        "oban_jobs",
        "river_job",
        "solid_queue_jobs",
        "solid_queue_ready_executions",
        "solid_queue_claimed_executions",
        "solid_queue_scheduled_executions",
        "messenger_messages",
        "_private_jobs",
        "procrastinate_jobs",
        "pgqueuer",
    }
)
# Names apps give their own job tables (no library's default).
GENERIC_QUEUE_NAMES = frozenset({"queue", "queues", "job_queue", "queue_jobs", "jobs_queue"})
# Tables named like jobs that hold none to claim (Laravel's failures and batches, logs).
_NOT_JOB_TABLES = frozenset({"failed_jobs", "job_batches", "jobs_history", "job_logs"})
# Names with job(s)/queue(s) as a word (solid_queue_ready_executions, que_jobs_2024): queue-like
# for PG202's tightening even when no library claims the exact name. A POSIX regex (PostgreSQL).
QUEUE_NAME_PATTERN = r"(^|_)(jobs?|queues?)(_|$)"
# PG202's lower queue thresholds apply when a horizon holder pins the table; without one a queue
# table needs this many dead tuples (a healthy queue leaves hundreds when autovacuum is off).
QUEUE_DEAD_WITHOUT_HOLDER = 5000


def library(name: str | None) -> Library | None:
    """The library registered under its SPEC name (laravel, pg-boss, ...)."""
    return LIBRARIES.get(name or "")


def is_queue_table(name: str) -> str | None:
    """The library whose default table this name is ('jobs' -> 'laravel', schema-qualified
    and quoted names accepted; a prefix like 'app_' is not stripped), else None."""
    base = name.rsplit(".", 1)[-1].strip('`"').lower()
    return _LIB_OF_NAME.get(base)


def _base(name: str) -> str:
    return name.rsplit(".", 1)[-1].strip('`"').lower()


def is_job_table(name: str | None) -> bool:
    """A table jobs are claimed from, by name: a library's job table, a generic queue name,
    or a name ending in _jobs / _queue (failed-job, batch and log tables are not)."""
    base = _base(name or "")
    if not base or base in _NOT_JOB_TABLES:
        return False
    return (
        base in JOB_TABLE_NAMES or base in GENERIC_QUEUE_NAMES or base.endswith(("_jobs", "_queue"))
    )


def is_queue_like(name: str) -> bool:
    """A library's table name, or job(s)/queue(s) as a word of it."""
    base = name.rsplit(".", 1)[-1].strip('`"').lower()
    return base in QUEUE_TABLE_NAMES or re.search(QUEUE_NAME_PATTERN, base) is not None


def recognise(columns: dict[str, str], engine: str, table: str = "") -> Shape | None:
    """The library shape a table's columns (and, where it has siblings, its name) match."""
    names = {c.lower() for c in columns}
    flavour = "postgresql" if engine == "postgresql" else "mysql"
    for shape in SHAPES:
        if flavour not in shape.engines or not shape.columns <= names or shape.excludes & names:
            continue
        if shape.name_suffix and not table.lower().endswith(shape.name_suffix):
            continue
        typed = {c.lower(): t for c, t in columns.items()}
        if any(typed.get(c) and type_kind(typed[c]) != kind for c, kind in shape.kinds):
            continue  # the library's names with another library's (or an app's) types
        return shape
    return None


# Name prefixes of the libraries' own table families (their sibling, log and process tables).
FAMILY_PREFIXES = (
    "oban_",
    "river_",
    "solid_queue_",
    "good_job",
    "que_",
    "procrastinate_",
    "pgqueuer",
    "_private_",
    "messenger_",
    "graphile_",
    "delayed_job",
)


def library_family(name: str, columns: dict[str, str] | set[str]) -> bool:
    """A known library's own non-job table (failures, batches, logs, archives, processes,
    named-queue locks): the library's module reads it or it holds no jobs to judge. A table
    named as a library's job table but not shaped like it is NOT family: the model reads it."""
    base = _base(name)
    if base in JOB_TABLE_NAMES:
        return False
    if base in QUEUE_TABLE_NAMES or base in _NOT_JOB_TABLES or base.startswith(FAMILY_PREFIXES):
        return True
    names = {c.lower() for c in columns}
    # an archive of a library's table (pg-boss `archive`: the job's columns and archived_on)
    return any(s.columns <= names and s.excludes & names for s in SHAPES)


def sibling_names(shape: Shape, table: str) -> dict[str, str]:
    """Placeholder -> table name of the shape's sibling tables, in the same schema."""
    stem = table[: len(table) - len(shape.name_suffix)] if shape.name_suffix else table
    return {sib: stem + sib for sib in shape.siblings}


def failure_meaning(lib: str | None, kind: str) -> str:
    own = library(lib)
    return (own.failure_meaning.get(kind) if own else None) or MEANING[kind]


def failure_fix(lib: str | None, kind: str) -> str:
    own = library(lib)
    if own is not None:
        return own.failure_fix.get(kind) or own.failure_fix.get("other") or FIX["other"]
    return FIX.get(kind, FIX["other"])
