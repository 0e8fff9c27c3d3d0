"""Typed rows of the statements snapshot sections (see sections.py): the statement history
and digests QU401/QU402 read (performance_schema on MySQL/MariaDB, pg_stat_statements).

A source switched off by configuration is not a failure: its section is `Unavailable`
(reason and fix), which the target line shows (Snapshot.unavailable()).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .sections import section
from .values import Row, as_row, as_rows, opt_float, opt_int, opt_str, to_bool, to_int, to_str

T = TypeVar("T")


@dataclass(frozen=True)
class Unavailable:
    """A statement source switched off on the server: why, and how to switch it on."""

    reason: str
    fix: str
    consumers: tuple[tuple[str, bool], ...] = ()  # performance_schema consumers, when read

    @classmethod
    def from_row(cls, row: Row) -> Unavailable:
        raw = row.get("consumers")
        pairs = raw.items() if isinstance(raw, Mapping) else ()
        return cls(
            reason=to_str(row.get("reason")),
            fix=to_str(row.get("fix")),
            consumers=tuple((to_str(k), to_bool(v)) for k, v in pairs),
        )

    def note(self) -> str:
        """One line for the target line and JSON."""
        return f"{self.reason}; to enable: {self.fix}"


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class StatementHistory:
    """my.statement_history: recent statements ordered by (thread, event)."""

    source: str
    limit: int = 0
    buffer_size: int | None = None
    max_sql_text_length: int | None = None
    statements: tuple[HistoryStatement, ...] = ()

    @classmethod
    def from_row(cls, row: Row) -> StatementHistory:
        raw = row.get("statements")
        items = raw if isinstance(raw, Sequence) and not isinstance(raw, (str, bytes)) else ()
        rows = (HistoryStatement.from_value(v) for v in items)
        return cls(
            source=to_str(row.get("source")),
            limit=to_int(row.get("limit")),
            buffer_size=opt_int(row.get("buffer_size")),
            max_sql_text_length=opt_int(row.get("max_sql_text_length")),
            statements=tuple(s for s in rows if s is not None),
        )


@dataclass(frozen=True)
class Digest:
    """One normalised statement and how often it ran. `scope` is MySQL's default schema or
    PostgreSQL's database (None: none)."""

    text: str
    calls: int = 0
    scope: str | None = None
    idle_seconds: float | None = None  # since its last call (MySQL); None: unknown

    @classmethod
    def from_row(cls, row: Row) -> Digest:
        g = row.get
        return cls(
            text=to_str(g("text")),
            calls=to_int(g("calls")),
            scope=opt_str(g("schema")) or opt_str(g("database")),
            idle_seconds=opt_float(g("idle_seconds")),
        )


@dataclass(frozen=True)
class StatementDigests:
    """my.statement_digests / pg.statement_digests: digests of locking reads and deletes."""

    source: str
    limit: int = 0
    version: str | None = None  # pg_stat_statements' version
    digests: tuple[Digest, ...] = ()

    @classmethod
    def from_row(cls, row: Row) -> StatementDigests:
        return cls(
            source=to_str(row.get("source")),
            limit=to_int(row.get("limit")),
            version=opt_str(row.get("version")),
            digests=tuple(Digest.from_row(r) for r in as_rows(row.get("digests"))),
        )


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
