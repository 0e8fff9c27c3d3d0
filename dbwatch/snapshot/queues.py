"""Typed rows of the queues snapshot sections (see sections.py).

One shape per concept, for every library and both engines: a queue table's statistics
(`QueueTableStats`) hold the rows its probe queries return per aspect (summary, reserved,
repeated, failed, locks). The library's own words stay as the library wrote them: queue
names, job classes, failure heads and the library's SPEC name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from ..frozen import frozen
from .sections import FromRow, SectionKey, one_of, rows_of, section
from .values import (
    Read,
    Row,
    TypedRow,
    as_rows,
    to_bool,
    to_int,
    to_str,
)

R = TypeVar("R", bound=FromRow)


def _rows(cls: type[R], v: object) -> tuple[R, ...] | None:
    """An aspect's rows; None when the aspect was not read for this table (no SQL for it)."""
    if v is None:
        return None
    if isinstance(v, tuple) and all(isinstance(r, cls) for r in v):
        return v
    return tuple(cls.from_row(r) for r in as_rows(v))


def _aspect(cls: type[R]) -> Callable[[object], tuple[R, ...] | None]:
    return lambda v: _rows(cls, v)


# ---------------------------------------------------------------- queue indexes (QU301)


@frozen
class QueueIndex(TypedRow):
    """One index of a Laravel-shaped jobs table (queue_indexes.sql, both engines)."""

    schema: str
    table_name: str
    index_name: str | None  # None: a table without any index (PostgreSQL's LEFT JOIN)
    columns: tuple[str, ...] = ()
    is_primary: bool = False


# ---------------------------------------------------------------- queue tables (QU001-QU004)


@frozen
class QueueSummary(TypedRow):
    """One queue of a table, over the probe's window of the oldest rows."""

    queue: str | None
    total: int = 0
    available: int = 0
    oldest_available_seconds: float | None = None
    # None: this query does not read claimed jobs (pg-boss 10/11: the reserved query does)
    reserved: int | None = 0
    oldest_reserved_seconds: float | None = None
    repeated: int = 0
    max_attempts: int | None = None


@frozen
class ReservedGroup(TypedRow):
    """Claimed jobs of one queue with the same claim age and expiry."""

    queue: str | None
    reserved_seconds: float = 0.0
    n: int = 0
    expires_after: float | None = None  # the library's own expiry; None: retry_after
    heartbeat: bool = False  # pg-boss 12: aged by its heartbeat, limited by heartbeatSeconds
    lease_overdue: float | None = None  # generic: seconds past the row's own locked-until


@frozen
class RepeatedGroup(TypedRow):
    """Jobs of one queue and class that were attempted this many times."""

    queue: str | None
    job_class: str | None = None  # as the payload has it (decoded by queues.job_class)
    attempts: int = 0
    n: int = 0
    timeout_head: str | None = None  # the payload's text after "timeout": (Laravel)


# The probe counts failures in fixed windows: name -> seconds.
FAILURE_BUCKETS: tuple[tuple[int, str], ...] = (
    (3600, "n_1h"),
    (21600, "n_6h"),
    (86400, "n_24h"),
    (259200, "n_3d"),
    (604800, "n_7d"),
)


def _within(row: Row) -> tuple[tuple[str, int], ...]:
    return tuple((k, to_int(row.get(k))) for _, k in FAILURE_BUCKETS)


@frozen
class FailedGroup(TypedRow, within=Read(compute=_within)):
    """Failures of one queue, error head and job class within the probe's horizon."""

    queue: str | None
    head: str | None = None  # the error's first line, in the library's words
    job_class: str | None = None
    n: int = 0
    within: tuple[tuple[str, int], ...] = ()  # (bucket name, count) per FAILURE_BUCKETS
    latest: str | None = None
    latest_seconds_ago: float | None = None
    untimed: int = 0  # generic: failed rows with no time of failure (counted in every window)

    def count(self, bucket: str) -> int:
        """Failures in the bucket's window (n_1h ... n_7d)."""
        return dict(self.within).get(bucket, 0)


@frozen
class QueueLock(TypedRow):
    """graphile-worker: a named queue locked by a worker."""

    queue: str | None
    worker: str | None = None
    locked_seconds: float = 0.0
    waiting: int = 0
    held_jobs: int = 0


def _states(v: object) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
    """Generic tables: per queue, rows by state (waiting, scheduled, running, failed, done,
    unmapped) in the model's windows."""
    out = []
    for r in as_rows(v):
        counts = r.get("states")
        if isinstance(counts, Mapping):
            out.append(
                (to_str(r.get("queue")), tuple((to_str(k), to_int(n)) for k, n in counts.items()))
            )
    return tuple(out)


def _names(v: object) -> tuple[tuple[str, str], ...]:
    if isinstance(v, (tuple, list)):
        return tuple((to_str(k), to_str(n)) for k, n in v if isinstance(k, str))
    if isinstance(v, Mapping):
        return tuple((to_str(k), to_str(n)) for k, n in v.items())
    return ()


@frozen
class QueueTableStats(
    TypedRow,
    scale_depth=Read(convert=lambda v: True if v is None else to_bool(v)),
    siblings=Read(convert=_names),
    summary=Read(convert=_aspect(QueueSummary)),
    reserved=Read(convert=_aspect(ReservedGroup)),
    repeated=Read(convert=_aspect(RepeatedGroup)),
    failed=Read(convert=_aspect(FailedGroup)),
    locks=Read(convert=_aspect(QueueLock)),
    roles=Read(convert=_names),
    statuses=Read(convert=_names),
    states=Read(convert=_states),
    read=Read(convert=_names),
):
    """One queue table as the probe read it: what it is (library, kind) and its aspects.
    An aspect is None when the table's kind has no query for it."""

    schema: str
    table: str
    kind: str  # the shape: selects the probe's SQL (queue_<kind>_<aspect>.sql)
    library: str | None  # the SPEC name (laravel, pg-boss, ...), as findings carry it
    rows_estimate: int | None = None
    attempts_type: str | None = None
    attempts_limit: int | None = None  # the attempts column's type limit
    current: bool = False  # in the connected database
    scale_depth: bool = True  # the row estimate is the queue (finished rows leave it)
    siblings: tuple[tuple[str, str], ...] = ()  # placeholder -> sibling table name
    expire: str | None = None
    heartbeat: bool = False
    variant: str | None = None  # the client/version read from the table (Oban: elixir/python)
    window: int = 0  # oldest rows read per table
    failed_window: int = 0  # newest failure rows read
    groups: int = 0  # grouped rows returned per query
    horizon: int | None = None
    window_capped_ids: bool = False  # an id-range window: more ids past it
    repeated_window: int | None = None  # repeated attempts read from fewer rows than window
    error: str | None = None
    privilege: bool = False
    examined_at: float | None = None
    reused: bool = False  # the daemon's rotation: a result from an earlier cycle
    summary: tuple[QueueSummary, ...] | None = None
    reserved: tuple[ReservedGroup, ...] | None = None
    repeated: tuple[RepeatedGroup, ...] | None = None
    failed: tuple[FailedGroup, ...] | None = None
    locks: tuple[QueueLock, ...] | None = None
    # The generic model (library "generic"): the column of each role, the status values by
    # state (and those it could not map), where they were read, per-queue state counts, the
    # window read, and which of backlog / stuck / failed the table cannot tell (DW002).
    roles: tuple[tuple[str, str], ...] = ()
    statuses: tuple[tuple[str, str], ...] = ()
    unmapped: tuple[str, ...] = ()
    statuses_from: str | None = None
    states: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()
    window_text: str | None = None
    unjudged: tuple[str, ...] = ()
    # how a bounded read was made, for evidence (pg-boss 10/11: the active/failed pass's slices,
    # pages, snapshot, whether its counts are exact)
    read: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        """schema.table as evidence and subjects show it (unquoted)."""
        return f"{self.schema}.{self.table}"


@frozen
class QueueStats(TypedRow, tables=Read(convert=lambda v: _rows(QueueTableStats, v) or ())):
    """The pg.queues / my.queues section: the tables examined this cycle and how many."""

    tables: tuple[QueueTableStats, ...] = ()
    discovered: int = 0
    probed: int = 0
    max_tables: int = 0
    scope: str | None = None  # MySQL/MariaDB: the URL's database; None = every schema
    skipped: tuple[str, ...] = ()  # schema.table past the cap or the time budget
    retry_after: float | None = None  # the target's retry_after (Laravel), if configured
    libraries: tuple[str, ...] = ()


PG_QUEUE_INDEXES = section("pg.queue_indexes", rows_of(QueueIndex))
MY_QUEUE_INDEXES = section("my.queue_indexes", rows_of(QueueIndex))
PG_QUEUES = section("pg.queues", one_of(QueueStats))
MY_QUEUES = section("my.queues", one_of(QueueStats))


def queue_indexes_key(engine: str) -> SectionKey[tuple[QueueIndex, ...]]:
    """The engine's queue-index section (MariaDB reads MySQL's)."""
    return PG_QUEUE_INDEXES if engine == "postgresql" else MY_QUEUE_INDEXES


def queues_key(engine: str) -> SectionKey[QueueStats]:
    """The engine's queue-table section (MariaDB reads MySQL's)."""
    return PG_QUEUES if engine == "postgresql" else MY_QUEUES
