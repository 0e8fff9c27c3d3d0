"""The connection under `State`: one SQLite (or PostgreSQL) connection behind a re-entrant
lock, atomic transactions that nest, and typed reads. The stores (findings, the alert
outbox, the journal) are built on it."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Any

from ..snapshot.values import Row
from .statedb import Param, StateConn, is_pg_url, migrate, open_conn


class StateBase:
    """One connection behind a re-entrant lock; writes are short transactions."""

    def __init__(
        self, path: str | Path, retention: float = 7 * 86400.0, schema: str | None = None
    ) -> None:
        """`path`: a SQLite file (":memory:" for tests) or a postgresql:// URL (a fleet), whose
        tables live in `schema` (default $DBWATCH_STATE_SCHEMA, else "dbwatch")."""
        schema = schema or os.environ.get("DBWATCH_STATE_SCHEMA") or "dbwatch"
        location = str(path)
        self.path = location
        if is_pg_url(location):  # targets (the one redaction) only when a URL is shown
            from ..targets import redact_url

            self.path = redact_url(location)
        self.retention = retention
        self._lock = threading.RLock()
        self._depth = 0
        self._sync = True  # the open transaction's commit waits for the disk
        self._synchronous = "FULL"  # SQLite's level now (open_conn sets FULL)
        db, self.dialect = open_conn(location, schema)
        self._db: StateConn = db
        self._begin = "BEGIN IMMEDIATE" if self.dialect == "sqlite" else "BEGIN"
        with self._lock:
            migrate(self._db, self.dialect)
        self._last_prune = 0.0
        # In-memory copies of what this connection wrote or read (the live findings per
        # target, the series' newest points), so an idle cycle need not read them back. They
        # hold while no other connection committed — SQLite's `PRAGMA data_version` moves when
        # one did (another process, another State on the file) — and no transaction of ours
        # was rolled back (both drop them all). A PostgreSQL state (a fleet: other daemons
        # write the same rows) keeps none.
        self._memo = self.dialect == "sqlite"
        self._memos: list[dict[Any, Any]] = []
        self._data_version: object = None
        self._version_checked = False  # in the open transaction: no other writer until COMMIT

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def transaction(self, durable: bool = True) -> Transaction:
        """BEGIN (IMMEDIATE on SQLite) … COMMIT; nested uses join the outer transaction.

        `durable=False` (a cycle's bookkeeping: its record, metrics, deadlocks with the log
        position; a cycle's findings when nothing changed but when they were last seen): the
        commit survives a killed process but not a power loss, without waiting for the disk —
        SQLite's synchronous=NORMAL for that commit (WAL: the next durable commit's fsync
        covers it), PostgreSQL's synchronous_commit=off. A full fsync per target-cycle under
        the state lock (7 ms on a busy disk) was what 2,000 targets at 15 s queued behind.
        A write inside that must last (a finding's transition, an alert queued or marked
        sent) calls want_sync(): the commit then waits for the disk as before.

        A class, not a generator: a cycle enters a dozen of them, nearly all nested, and a
        nested one is now a counter under the lock (3.8 µs each as @contextmanager)."""
        return Transaction(self, durable)

    def _open(self, durable: bool) -> bool:
        """The outermost transaction's BEGIN, under the lock; whether its commit is relaxed."""
        self._sync = durable
        relaxed = not durable and self.dialect == "sqlite"
        self._level("NORMAL" if relaxed else "FULL")
        self._db.execute(self._begin)
        self._depth = 1
        self._version_checked = False
        return relaxed

    def _close(self, relaxed: bool, failed: bool) -> None:
        """The outermost transaction's ROLLBACK (`failed`) or COMMIT, under the lock."""
        self._depth = 0
        if failed:
            self._forget()  # the copies may hold what is rolled back now
            self._db.execute("ROLLBACK")
            return
        try:
            if not self._sync and self.dialect != "sqlite":
                self._db.execute("SET LOCAL synchronous_commit = off")
            self._db.execute("COMMIT")
        except BaseException:
            self._forget()
            raise
        if relaxed and self._sync:
            self._flush()

    def _level(self, level: str) -> None:
        """SQLite's synchronous level for the next commit, set only when it changes (SQLite
        takes it outside a transaction only): a cycle's relaxed commits in a row pay no
        PRAGMA. The level stays until the next transaction sets its own."""
        if self.dialect == "sqlite" and self._synchronous != level:
            self._db.execute(f"PRAGMA synchronous={level}")  # one of two constants
            self._synchronous = level

    def _memo_ok(self) -> bool:
        """Under the lock: whether the in-memory copies may answer (SQLite; every one of them
        dropped first if another connection committed since the last look). Inside a
        transaction it looks once: BEGIN IMMEDIATE holds off every other writer until COMMIT."""
        if not self._memo:
            return False
        if self._depth and self._version_checked:
            return True
        row = self._db.execute("PRAGMA data_version").fetchone()
        version = None if row is None else row.get("data_version")
        if version is None or version != self._data_version:
            self._forget()
            self._data_version = version
        self._version_checked = self._depth > 0
        return version is not None

    def _memo_dict(self) -> dict[Any, Any]:
        """A new in-memory copy, dropped with the others (_forget)."""
        out: dict[Any, Any] = {}
        self._memos.append(out)
        return out

    def _forget(self) -> None:
        for memo in self._memos:
            memo.clear()

    def want_sync(self) -> None:
        """Inside a transaction: its commit waits for the disk, whatever it was opened with."""
        with self._lock:
            self._sync = True

    def _flush(self) -> None:
        """SQLite, after a relaxed commit that wanted the disk: one small write committed with
        synchronous=FULL, whose fsync of the write-ahead log covers the commit before it (the
        level cannot change inside a transaction; checked with strace: one fdatasync)."""
        self._level("FULL")
        self._db.execute(self._begin)
        try:
            self._db.execute(
                "INSERT INTO meta(key, value) VALUES ('synced', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (repr(time.time()),),
            )
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def query(self, sql: str, params: Iterable[Param] = ()) -> list[Row]:
        """Rows of one read (mappings), in the shared `?` dialect."""
        return self._rows(sql, params)

    def _rows(self, sql: str, params: Iterable[Param] = ()) -> list[Row]:
        with self._lock:
            return list(self._db.execute(sql, tuple(params)).fetchall())


class Transaction(AbstractContextManager[StateConn]):
    """`StateBase.transaction()`: holds the state's lock from enter to exit; the outermost
    one opens and ends the database transaction (an exception rolls it back and propagates)."""

    __slots__ = ("durable", "outer", "relaxed", "state")

    def __init__(self, state: StateBase, durable: bool) -> None:
        self.state, self.durable = state, durable
        self.outer = self.relaxed = False

    def __enter__(self) -> StateConn:
        st = self.state
        st._lock.acquire()
        if st._depth:
            st._depth += 1
            return st._db
        try:
            self.relaxed = st._open(self.durable)
        except BaseException:
            st._lock.release()
            raise
        self.outer = True
        return st._db

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        st = self.state
        try:
            if self.outer:
                st._close(self.relaxed, exc_type is not None)
            else:
                st._depth -= 1
        finally:
            st._lock.release()
