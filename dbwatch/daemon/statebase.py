"""The connection under `State`: one SQLite (or PostgreSQL) connection behind a re-entrant
lock, atomic transactions that nest, and typed reads. The stores (findings, the alert
outbox, the journal) are built on it."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..snapshot.values import Row
from .statedb import Param, StateConn, is_pg_url, migrate, open_conn


def _redact(url: str) -> str:
    from ..targets import redact_url

    return redact_url(url)


class StateBase:
    """One connection behind a re-entrant lock; writes are short transactions."""

    def __init__(
        self, path: str | Path, retention: float = 7 * 86400.0, schema: str | None = None
    ) -> None:
        """`path`: a SQLite file (":memory:" for tests) or a postgresql:// URL (a fleet), whose
        tables live in `schema` (default $DBWATCH_STATE_SCHEMA, else "dbwatch")."""
        schema = schema or os.environ.get("DBWATCH_STATE_SCHEMA") or "dbwatch"
        location = str(path)
        self.path = _redact(location) if is_pg_url(location) else location
        self.retention = retention
        self._lock = threading.RLock()
        self._depth = 0
        db, self.dialect = open_conn(location, schema)
        self._db: StateConn = db
        self._begin = "BEGIN IMMEDIATE" if self.dialect == "sqlite" else "BEGIN"
        with self._lock:
            migrate(self._db, self.dialect)
        self._last_prune = 0.0

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self, durable: bool = True) -> Iterator[StateConn]:
        """BEGIN (IMMEDIATE on SQLite) … COMMIT; nested uses join the outer transaction.

        `durable=False` (a cycle's bookkeeping: its record, metrics, deadlocks with the log
        position): the commit survives a killed process but not a power loss, without waiting
        for the disk — SQLite's synchronous=NORMAL for that commit (WAL: the next durable
        commit's fsync covers it), PostgreSQL's synchronous_commit=off. A full fsync per
        target-cycle under the state lock (7 ms on a busy disk) was what 2,000 targets at
        15 s queued behind. Alerts, findings and the outbox stay durable."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self._db
                finally:
                    self._depth -= 1
                return
            relaxed = not durable and self.dialect == "sqlite"
            if relaxed:
                self._db.execute("PRAGMA synchronous=NORMAL")
            try:
                self._db.execute(self._begin)
                if not durable and self.dialect != "sqlite":
                    self._db.execute("SET LOCAL synchronous_commit = off")
                self._depth = 1
                try:
                    yield self._db
                except BaseException:
                    self._depth = 0
                    self._db.execute("ROLLBACK")
                    raise
                self._depth = 0
                self._db.execute("COMMIT")
            finally:
                if relaxed:
                    self._db.execute("PRAGMA synchronous=FULL")

    def query(self, sql: str, params: Iterable[Param] = ()) -> list[Row]:
        """Rows of one read (mappings), in the shared `?` dialect."""
        return self._rows(sql, params)

    def _rows(self, sql: str, params: Iterable[Param] = ()) -> list[Row]:
        with self._lock:
            return list(self._db.execute(sql, tuple(params)).fetchall())
