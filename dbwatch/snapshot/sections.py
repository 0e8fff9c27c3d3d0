"""The section registry: each snapshot section's name, the type of its data, and the one
function that builds that data from the driver's rows (or a test's YAML).

A probe returns driver rows; `build()` turns them into frozen rows once, at the probe
boundary; checks read `snapshot.get(KEY)` and see typed data only. Builders are
idempotent: data already built passes through unchanged (the daemon's probe cache).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, Self, TypeVar, cast

from ..frozen import frozen
from ..registry import Registry
from .values import Row, as_row, as_rows

T = TypeVar("T")
R = TypeVar("R", bound="FromRow")


class FromRow(Protocol):
    @classmethod
    def from_row(cls, row: Row) -> Self: ...


@frozen
class SectionKey(Generic[T]):
    """A section's name and its builder; `snapshot.get(key)` is typed by it."""

    name: str
    build: Callable[[object], T]


# The section families: each registers its sections with `section(...)` as it loads. Imported
# once, when the registry is first read (the first section built). tests/test_registry.py
# fails on a module that registers a section and is missing here.
SECTIONS: Registry[SectionKey[object]] = Registry(
    "section",
    tuple(
        f"dbwatch.snapshot.{m}"
        for m in ("my", "origin", "pg", "pg_mvcc", "queues", "settings", "statements")
    ),
)

# section name -> the family registering it: building a section imports its own family only,
# so a PostgreSQL audit never imports the MySQL rows and their InnoDB parsers (startup cost).
# tests/test_startup.py checks it against what the families register; a name not listed here
# loads every family, as reading SECTIONS does.
SECTION_MODULES: dict[str, str] = {
    "my.innodb_counters": "my",
    "my.innodb_status": "my",
    "my.lock_waits": "my",
    "my.privileges": "settings",
    "my.queue_indexes": "queues",
    "my.queues": "queues",
    "my.settings": "settings",
    "my.statement_digests": "statements",
    "my.statement_history": "statements",
    "my.trx": "my",
    "my.txn_detail": "origin",
    "pg.dead_tuples": "pg_mvcc",
    "pg.deadlocks": "pg_mvcc",
    "pg.horizon": "pg",
    "pg.privileges": "settings",
    "pg.queue_indexes": "queues",
    "pg.queues": "queues",
    "pg.sessions": "pg",
    "pg.settings": "settings",
    "pg.statement_digests": "statements",
    "pg.txn_detail": "origin",
}


def section(name: str, build: Callable[[object], T]) -> SectionKey[T]:
    """Register the section `name`, whose data `build` makes; the key reads it typed."""
    key = SectionKey(name, build)
    SECTIONS.add(name, key)  # type: ignore[arg-type]  # a registry of heterogeneous keys
    return key


class Built(tuple[object, ...]):
    """Rows a builder made (a plain tuple otherwise): `snapshot.get` and the daemon's shared
    results pass them through in O(1) instead of re-checking thousands of session rows."""

    __slots__ = ()


# No rows, whatever their type: one object. An idle server's shared reads of no transactions
# (my.trx) are then the same object read after read, as a section reused unchanged is: what
# compares what it read by identity (the rules' memo, `snapshot.memo.per_read`) holds across
# reads instead of running again on each new empty one.
NO_ROWS = Built()


def rows_of(cls: type[R]) -> Callable[[object], tuple[R, ...]]:
    """A builder for a section that is a list of rows of one type."""

    def build(data: object) -> tuple[R, ...]:
        if type(data) is Built and (not data or type(data[0]) is cls):
            return cast(tuple[R, ...], data if data else NO_ROWS)
        if isinstance(data, tuple) and all(isinstance(r, cls) for r in data):
            return cast(tuple[R, ...], Built(data) if data else NO_ROWS)
        rows = Built(cls.from_row(r) for r in as_rows(data))
        return cast(tuple[R, ...], rows if rows else NO_ROWS)

    return build


def one_of(cls: type[R]) -> Callable[[object], R]:
    """A builder for a section that is one object (a mapping from the driver or a test)."""

    def build(data: object) -> R:
        return data if isinstance(data, cls) else cls.from_row(as_row(data))

    return build


def build(name: str, data: object) -> object:
    """The section's typed data (None stays None); an unregistered section is kept as is.
    The first call for a section imports its family (SECTION_MODULES; every family for a name
    not listed there)."""
    if data is None:
        return None
    key = SECTIONS.registered().get(name)
    if key is None:
        key = section_key(name)
    return data if key is None else key.build(data)


def section_key(name: str) -> SectionKey[object] | None:
    """The registered key of section `name`, importing its family only (None: no such section)."""
    family = SECTION_MODULES.get(name)
    if family is None:
        return SECTIONS.get(name)
    return SECTIONS.load_only((f"dbwatch.snapshot.{family}",)).get(name)
