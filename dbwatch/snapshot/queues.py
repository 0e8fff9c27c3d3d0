"""Typed rows of the queues snapshot sections (see sections.py).

One shape per concept, for every library and both engines: a queue table's statistics
(`QueueTableStats`) hold the rows its probe queries return per aspect (summary, reserved,
repeated, failed, locks). The library's own words stay as the library wrote them: queue
names, job classes, failure heads and the library's SPEC name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from .sections import FromRow, SectionKey, rows_of, section
from .values import (
    Row,
    as_row,
    as_rows,
    opt_float,
    opt_int,
    opt_str,
    str_list,
    to_bool,
    to_float,
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


# ---------------------------------------------------------------- queue indexes (QU301)


@dataclass(frozen=True)
class QueueIndex:
    """One index of a Laravel-shaped jobs table (queue_indexes.sql, both engines)."""

    schema: str
    table_name: str
    index_name: str | None  # None: a table without any index (PostgreSQL's LEFT JOIN)
    columns: tuple[str, ...] = ()
    is_primary: bool = False

    @classmethod
    def from_row(cls, row: Row) -> QueueIndex:
        g = row.get
        return cls(
            schema=to_str(g("schema")),
            table_name=to_str(g("table_name")),
            index_name=opt_str(g("index_name")),
            columns=str_list(g("columns")),
            is_primary=to_bool(g("is_primary")),
        )


# ---------------------------------------------------------------- queue tables (QU001-QU004)


@dataclass(frozen=True)
class QueueSummary:
    """One queue of a table, over the probe's window of the oldest rows."""

    queue: str | None
    total: int = 0
    available: int = 0
    oldest_available_seconds: float | None = None
    reserved: int = 0
    oldest_reserved_seconds: float | None = None
    repeated: int = 0
    max_attempts: int | None = None

    @classmethod
    def from_row(cls, row: Row) -> QueueSummary:
        g = row.get
        return cls(
            queue=opt_str(g("queue")),
            total=to_int(g("total")),
            available=to_int(g("available")),
            oldest_available_seconds=opt_float(g("oldest_available_seconds")),
            reserved=to_int(g("reserved")),
            oldest_reserved_seconds=opt_float(g("oldest_reserved_seconds")),
            repeated=to_int(g("repeated")),
            max_attempts=opt_int(g("max_attempts")),
        )


@dataclass(frozen=True)
class ReservedGroup:
    """Claimed jobs of one queue with the same claim age and expiry."""

    queue: str | None
    reserved_seconds: float = 0.0
    n: int = 0
    expires_after: float | None = None  # the library's own expiry; None: retry_after
    heartbeat: bool = False  # pg-boss 12: aged by its heartbeat, limited by heartbeatSeconds

    @classmethod
    def from_row(cls, row: Row) -> ReservedGroup:
        g = row.get
        return cls(
            queue=opt_str(g("queue")),
            reserved_seconds=to_float(g("reserved_seconds")),
            n=to_int(g("n")),
            expires_after=opt_float(g("expires_after")),
            heartbeat=to_bool(g("heartbeat")),
        )


@dataclass(frozen=True)
class RepeatedGroup:
    """Jobs of one queue and class that were attempted this many times."""

    queue: str | None
    job_class: str | None = None  # as the payload has it (decoded by queues.job_class)
    attempts: int = 0
    n: int = 0
    timeout_head: str | None = None  # the payload's text after "timeout": (Laravel)

    @classmethod
    def from_row(cls, row: Row) -> RepeatedGroup:
        g = row.get
        return cls(
            queue=opt_str(g("queue")),
            job_class=opt_str(g("job_class")),
            attempts=to_int(g("attempts")),
            n=to_int(g("n")),
            timeout_head=opt_str(g("timeout_head")),
        )


# The probe counts failures in fixed windows: name -> seconds.
FAILURE_BUCKETS: tuple[tuple[int, str], ...] = (
    (3600, "n_1h"),
    (21600, "n_6h"),
    (86400, "n_24h"),
    (259200, "n_3d"),
    (604800, "n_7d"),
)


@dataclass(frozen=True)
class FailedGroup:
    """Failures of one queue, error head and job class within the probe's horizon."""

    queue: str | None
    head: str | None = None  # the error's first line, in the library's words
    job_class: str | None = None
    n: int = 0
    within: tuple[tuple[str, int], ...] = ()  # (bucket name, count) per FAILURE_BUCKETS
    latest: str | None = None
    latest_seconds_ago: float | None = None

    @classmethod
    def from_row(cls, row: Row) -> FailedGroup:
        g = row.get
        return cls(
            queue=opt_str(g("queue")),
            head=opt_str(g("head")),
            job_class=opt_str(g("job_class")),
            n=to_int(g("n")),
            within=tuple((k, to_int(g(k))) for _, k in FAILURE_BUCKETS),
            latest=opt_str(g("latest")),
            latest_seconds_ago=opt_float(g("latest_seconds_ago")),
        )

    def count(self, bucket: str) -> int:
        """Failures in the bucket's window (n_1h ... n_7d)."""
        return dict(self.within).get(bucket, 0)


@dataclass(frozen=True)
class QueueLock:
    """graphile-worker: a named queue locked by a worker."""

    queue: str | None
    worker: str | None = None
    locked_seconds: float = 0.0
    waiting: int = 0
    held_jobs: int = 0

    @classmethod
    def from_row(cls, row: Row) -> QueueLock:
        g = row.get
        return cls(
            queue=opt_str(g("queue")),
            worker=opt_str(g("worker")),
            locked_seconds=to_float(g("locked_seconds")),
            waiting=to_int(g("waiting")),
            held_jobs=to_int(g("held_jobs")),
        )


def _names(v: object) -> tuple[tuple[str, str], ...]:
    if isinstance(v, tuple):
        return tuple((to_str(k), to_str(n)) for k, n in v if isinstance(k, str))
    if isinstance(v, Mapping):
        return tuple((to_str(k), to_str(n)) for k, n in v.items())
    return ()


@dataclass(frozen=True)
class QueueTableStats:
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
    window: int = 0  # oldest rows read per table
    failed_window: int = 0  # newest failure rows read
    groups: int = 0  # grouped rows returned per query
    horizon: int | None = None
    window_capped_ids: bool = False  # MySQL id range: more ids past the window
    error: str | None = None
    privilege: bool = False
    examined_at: float | None = None
    reused: bool = False  # the daemon's rotation: a result from an earlier cycle
    summary: tuple[QueueSummary, ...] | None = None
    reserved: tuple[ReservedGroup, ...] | None = None
    repeated: tuple[RepeatedGroup, ...] | None = None
    failed: tuple[FailedGroup, ...] | None = None
    locks: tuple[QueueLock, ...] | None = None

    @classmethod
    def from_row(cls, row: Row) -> QueueTableStats:
        g = row.get
        scale = g("scale_depth")
        return cls(
            schema=to_str(g("schema")),
            table=to_str(g("table")),
            kind=to_str(g("kind")),
            library=opt_str(g("library")),
            rows_estimate=opt_int(g("rows_estimate")),
            attempts_type=opt_str(g("attempts_type")),
            attempts_limit=opt_int(g("attempts_limit")),
            current=to_bool(g("current")),
            scale_depth=True if scale is None else to_bool(scale),
            siblings=_names(g("siblings")),
            expire=opt_str(g("expire")),
            heartbeat=to_bool(g("heartbeat")),
            window=to_int(g("window")),
            failed_window=to_int(g("failed_window")),
            groups=to_int(g("groups")),
            horizon=opt_int(g("horizon")),
            window_capped_ids=to_bool(g("window_capped_ids")),
            error=opt_str(g("error")),
            privilege=to_bool(g("privilege")),
            examined_at=opt_float(g("examined_at")),
            reused=to_bool(g("reused")),
            summary=_rows(QueueSummary, g("summary")),
            reserved=_rows(ReservedGroup, g("reserved")),
            repeated=_rows(RepeatedGroup, g("repeated")),
            failed=_rows(FailedGroup, g("failed")),
            locks=_rows(QueueLock, g("locks")),
        )

    @property
    def name(self) -> str:
        """schema.table as evidence and subjects show it (unquoted)."""
        return f"{self.schema}.{self.table}"


@dataclass(frozen=True)
class QueueStats:
    """The pg.queues / my.queues section: the tables examined this cycle and how many."""

    tables: tuple[QueueTableStats, ...] = ()
    discovered: int = 0
    probed: int = 0
    max_tables: int = 0
    scope: str | None = None  # MySQL/MariaDB: the URL's database; None = every schema
    skipped: tuple[str, ...] = ()  # schema.table past the cap or the time budget
    retry_after: float | None = None  # the target's retry_after (Laravel), if configured
    libraries: tuple[str, ...] = ()

    @classmethod
    def from_row(cls, row: Row) -> QueueStats:
        g = row.get
        tables = g("tables")
        return cls(
            tables=_rows(QueueTableStats, tables) or (),
            discovered=to_int(g("discovered")),
            probed=to_int(g("probed")),
            max_tables=to_int(g("max_tables")),
            scope=opt_str(g("scope")),
            skipped=str_list(g("skipped")),
            retry_after=opt_float(g("retry_after")),
            libraries=str_list(g("libraries")),
        )


def _one(cls: type[R]) -> Callable[[object], R]:
    """A builder for a section that is one object (idempotent)."""

    def build(data: object) -> R:
        return data if isinstance(data, cls) else cls.from_row(as_row(data))

    return build


PG_QUEUE_INDEXES = section("pg.queue_indexes", rows_of(QueueIndex))
MY_QUEUE_INDEXES = section("my.queue_indexes", rows_of(QueueIndex))
PG_QUEUES = section("pg.queues", _one(QueueStats))
MY_QUEUES = section("my.queues", _one(QueueStats))


def queue_indexes_key(engine: str) -> SectionKey[tuple[QueueIndex, ...]]:
    """The engine's queue-index section (MariaDB reads MySQL's)."""
    return PG_QUEUE_INDEXES if engine == "postgresql" else MY_QUEUE_INDEXES


def queues_key(engine: str) -> SectionKey[QueueStats]:
    """The engine's queue-table section (MariaDB reads MySQL's)."""
    return PG_QUEUES if engine == "postgresql" else MY_QUEUES
