"""Typed rows of the pg_mvcc snapshot sections (see sections.py): dead tuples per table
(PG201's harm path, PG202) and the deadlock counters of pg_stat_database (PG102)."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from ..frozen import frozen
from .sections import rows_of, section
from .values import TypedRow, as_rows, str_list


@frozen
class PgDeadTable(TypedRow):
    """One table of dead_tuples.sql: its dead tuples, vacuums and whether autovacuum may run."""

    database: str | None = None
    schema: str | None = None
    table: str | None = None
    n_live_tup: int | None = None
    n_dead_tup: int | None = None
    n_tup_upd: int | None = None
    n_tup_del: int | None = None
    last_vacuum: str | None = None  # ISO 8601
    last_autovacuum: str | None = None
    vacuum_count: int | None = None
    autovacuum_count: int | None = None
    vacuum_seconds_ago: float | None = None  # since the last vacuum of either kind
    server_autovacuum: str | None = None  # the server's `autovacuum` setting
    table_autovacuum_enabled: str | None = None  # the table's reloption, None when unset
    queue: bool = False  # a queue table (by name or by its columns)

    @property
    def key(self) -> str:
        """database.schema.table: the daemon's history key and the finding's table."""
        return f"{self.database}.{self.schema}.{self.table}"

    @property
    def dead(self) -> int:
        return self.n_dead_tup or 0


@frozen
class PgDeadTuples:
    """The pg.dead_tuples section: the databases read and their tables with dead tuples."""

    databases: tuple[str, ...] = ()
    tables: tuple[PgDeadTable, ...] = ()

    @classmethod
    def build(cls, data: object) -> PgDeadTuples:
        if isinstance(data, PgDeadTuples):
            return data
        if not isinstance(data, Mapping):
            return cls()
        return cls(
            databases=str_list(data.get("databases")),
            tables=tuple(PgDeadTable.from_row(r) for r in as_rows(data.get("tables"))),
        )


@frozen
class PgDeadlockCounter(TypedRow):
    """One database's row of pg_stat_database: deadlocks since the statistics reset."""

    database: str
    deadlocks: int | None = None
    stats_reset: str | None = None  # ISO 8601; None when never reset


PG_DEAD_TUPLES = section("pg.dead_tuples", PgDeadTuples.build)
PG_DEADLOCKS = section("pg.deadlocks", rows_of(PgDeadlockCounter))
# by_database() of the last few shared pg.deadlocks reads (held: their ids stay theirs)
_BY_DB: dict[int, tuple[object, dict[str, tuple[PgDeadlockCounter, ...]]]] = {}
_BY_DB_LOCK = threading.Lock()


def deadlocks_in_scope(
    rows: tuple[PgDeadlockCounter, ...] | None, scope: str | None
) -> tuple[PgDeadlockCounter, ...]:
    """The counters a target looks at: its database's row (pg.deadlocks is read for the whole
    server once and shared: 2,000 targets must not each walk 2,000 rows), all unscoped."""
    if not rows or scope is None:
        return rows or ()
    hit = _BY_DB.get(id(rows))
    if hit is None or hit[0] is not rows:
        index: dict[str, list[PgDeadlockCounter]] = {}
        for r in rows:
            index.setdefault(r.database, []).append(r)
        hit = (rows, {k: tuple(v) for k, v in index.items()})
        with _BY_DB_LOCK:  # the daemon's threads: eviction iterates the dict
            _BY_DB[id(rows)] = hit
            while len(_BY_DB) > 8:  # the oldest reads go
                _BY_DB.pop(next(iter(_BY_DB)), None)
    return hit[1].get(scope, ())
