"""Typed rows of the statements snapshot sections (see sections.py): the statement history
and digests QU401/QU402 read (performance_schema on MySQL/MariaDB, pg_stat_statements).

A source switched off by configuration is not a failure: its section is `Unavailable`
(reason and fix), which the target line shows (Snapshot.unavailable()).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from ..frozen import frozen
from .sections import section
from .values import Read, Row, TypedRow, as_row, built, opt_str, to_bool, to_int, to_str

T = TypeVar("T")


def _consumers(raw: object) -> tuple[tuple[str, bool], ...]:
    pairs = raw.items() if isinstance(raw, Mapping) else ()
    return tuple((to_str(k), to_bool(v)) for k, v in pairs)


@frozen
class Unavailable(TypedRow, consumers=Read(convert=_consumers)):
    """A statement source switched off on the server: why, and how to switch it on."""

    reason: str
    fix: str
    consumers: tuple[tuple[str, bool], ...] = ()  # performance_schema consumers, when read

    def note(self) -> str:
        """One line for the target line and JSON."""
        return f"{self.reason}; to enable: {self.fix}"


@frozen
class HistoryStatement:
    """One statement of another session, as performance_schema keeps it."""

    thread_id: int
    event_id: int
    text: str

    @classmethod
    def from_value(cls, v: object) -> HistoryStatement | None:
        """From a [thread_id, event_id, sql_text] triple; None if it is not one."""
        if isinstance(v, HistoryStatement):
            return v
        if isinstance(v, Sequence) and not isinstance(v, (str, bytes)) and len(v) == 3:
            thread, event, text = v
            return cls(to_int(thread), to_int(event), to_str(text))
        return None


def _statements(raw: object) -> tuple[HistoryStatement, ...]:
    items = raw if isinstance(raw, Sequence) and not isinstance(raw, (str, bytes)) else ()
    rows = (HistoryStatement.from_value(v) for v in items)
    return tuple(s for s in rows if s is not None)


@frozen
class StatementHistory(TypedRow, statements=Read(convert=_statements)):
    """my.statement_history: recent statements ordered by (thread, event)."""

    source: str
    limit: int = 0
    buffer_size: int | None = None
    max_sql_text_length: int | None = None
    statements: tuple[HistoryStatement, ...] = ()


def _scope(row: Row) -> str | None:
    return opt_str(row.get("schema")) or opt_str(row.get("database"))


@frozen
class Digest(TypedRow, scope=Read(compute=_scope)):
    """One normalised statement and how often it ran. `scope` is MySQL's default schema or
    PostgreSQL's database (None: none)."""

    text: str
    calls: int = 0
    scope: str | None = None
    idle_seconds: float | None = None  # since its last call (MySQL); None: unknown


@frozen
class StatementDigests(TypedRow, digests=Read(convert=built(Digest))):
    """my.statement_digests / pg.statement_digests: digests of locking reads and deletes."""

    source: str
    limit: int = 0
    version: str | None = None  # pg_stat_statements' version
    digests: tuple[Digest, ...] = ()


def _source(cls: type[T], from_row: Callable[[Row], T]) -> Callable[[object], T | Unavailable]:
    """A builder for a source section: the source's data, or Unavailable (idempotent)."""

    def build(data: object) -> T | Unavailable:
        if isinstance(data, (cls, Unavailable)):
            return data
        row = as_row(data)
        return from_row(row) if to_bool(row.get("available")) else Unavailable.from_row(row)

    return build


History = StatementHistory | Unavailable
Digests = StatementDigests | Unavailable

MY_STATEMENT_HISTORY = section(
    "my.statement_history", _source(StatementHistory, StatementHistory.from_row)
)
MY_STATEMENT_DIGESTS = section(
    "my.statement_digests", _source(StatementDigests, StatementDigests.from_row)
)
PG_STATEMENT_DIGESTS = section(
    "pg.statement_digests", _source(StatementDigests, StatementDigests.from_row)
)
