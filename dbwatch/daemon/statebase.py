"""The connection under `State`: one SQLite (or PostgreSQL) connection behind a re-entrant
lock, atomic transactions that nest, and typed reads. The stores (findings, the alert
outbox, the journal) are built on it."""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Any

from ..snapshot.values import Row
from .batch import batch_thread
from .statedb import (
    Cursor,
    Param,
    SqliteError,
    StateConn,
    data_version_reader,
    is_pg_url,
    migrate,
    open_conn,
)

log = logging.getLogger(__name__)

# SQLite: a cycle's relaxed writes (State.update's last_seen, the series points, the cycle
# record) wait in memory at most this long and go in one transaction with the others of the
# same tick (StateBase.transaction, "group commit"); 0 turns it off
GROUP_TICK = 0.25
# the tables deferred writes go to: a read of one of them sees them first (_rows)
_DEFERRED_TABLES = ("findings", "series", "cycles")
# the flusher with nothing to commit for this long sleeps until woken (or this long again:
# whether its State is gone)
_IDLE_WAIT = 60.0
# a deferred write: (sql, params or rows, executemany)
_Item = tuple[str, Any, bool]


class StateChanged(RuntimeError):
    """Another connection committed between a lazy transaction's look at the in-memory
    copies and its BEGIN (StateBase._start): the transaction is dropped, not written."""


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
        # group commit (SQLite): relaxed writes of several cycles in one transaction a tick
        self.group_tick = GROUP_TICK if self.dialect == "sqlite" else 0.0
        self._pending: list[_Item] = []  # committed by nothing yet: the group
        self._pending_since = 0.0  # monotonic time the group's oldest write was made
        self._txq: list[_Item] = []  # the open transaction's writes not sent yet
        self._started = True  # the open transaction sent its BEGIN (a lazy one: not yet)
        self._lazy = False  # the open transaction defers its writes while it can
        self._inflight: list[_Item] = []  # the group's writes sent in the open transaction
        self._full = True  # the open transaction began under synchronous=FULL
        self._closed = False
        self._cond = threading.Condition(self._lock)
        self._flusher: threading.Thread | None = None
        self._deep = False  # the flusher sleeps until woken (nothing came for a while)
        self._view: StateConn = _Started(self) if self.dialect == "sqlite" else db
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
        self._read_version = data_version_reader(db)
        self._version_checked = False  # in the open transaction: no other writer until COMMIT

    def close(self) -> None:
        with self._lock:
            try:
                self.flush()
            finally:
                self._closed = True
                self._cond.notify_all()
                self._db.close()

    def flush(self) -> None:
        """Commit the group's deferred writes now (close, tests, another reader's turn)."""
        with self._lock:
            if self._depth:
                self._start()
            else:
                self._flush_group()

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

        On SQLite with `group_tick` > 0 a relaxed transaction is lazy (group commit, see
        `_open`): the writes made through `_write`/`_write_many` wait in memory up to
        `group_tick` and are committed with the other cycles' of that tick; any other
        statement sends its BEGIN and everything deferred before it (docs/cycle-cost.md).

        A class, not a generator: a cycle enters a dozen of them, nearly all nested, and a
        nested one is now a counter under the lock (3.8 µs each as @contextmanager)."""
        return Transaction(self, durable)

    def _open(self, durable: bool) -> bool:
        """The outermost transaction, under the lock; whether its commit is relaxed. A relaxed
        one on SQLite with group commit on is lazy: no BEGIN yet — its writes made through
        `_write` wait in memory (`_txq`) and its first other statement sends the BEGIN
        (`_start`)."""
        self._sync = durable
        relaxed = not durable and self.dialect == "sqlite"
        self._depth = 1
        self._version_checked = False
        self._txq = []
        self._inflight = []
        self._lazy = relaxed and self.group_tick > 0
        self._started = False
        if self._lazy:
            return relaxed
        try:
            self._start()
        except BaseException:
            self._depth, self._started = 0, True
            raise
        return relaxed

    def _start(self) -> None:
        """Under the lock, inside a transaction: its BEGIN (at the synchronous level its commit
        will need, if known by now), then the group's deferred writes and its own. If one of
        those fails they are dropped with the in-memory copies (as a failed commit lost its
        cycle's writes) and the error raised; a BEGIN that fails leaves the group waiting."""
        if self._started:
            return
        full = self._sync or self.dialect != "sqlite"
        self._level("FULL" if full else "NORMAL")
        self._db.execute(self._begin)
        if self._version_checked and self._moved():
            # a lazy transaction decided on the in-memory copies before its BEGIN, and
            # another connection committed since: what it decided may be wrong, so nothing
            # of it is written (the cycle fails; the next one reads everything afresh)
            self._forget()
            self._txq = []
            self._rollback_quietly()
            raise StateChanged("the state changed under a cycle's transaction; not written")
        self._started, self._full = True, full
        self._inflight, self._pending = self._pending, []
        items, self._txq = self._txq, []
        try:
            _send(self._db, self._inflight)
            _send(self._db, items)
        except BaseException:
            self._forget()
            self._inflight = []
            self._started = False
            self._rollback_quietly()
            raise

    def _write(self, sql: str, params: Sequence[Param]) -> None:
        """A write inside a transaction whose result nobody reads: deferred while the
        transaction is lazy (it goes with the group: see transaction()), else sent."""
        if self._started:
            self._db.execute(sql, params)
        else:
            self._txq.append((sql, params, False))

    @property
    def _deferring(self) -> bool:
        """Inside a lazy transaction that sent nothing yet: `_write`s wait for the group."""
        return not self._started

    def _write_many(self, sql: str, rows: Sequence[Sequence[Param]]) -> None:
        if self._started:
            self._db.executemany(sql, rows)
        else:
            self._txq.append((sql, rows, True))

    def _close(self, relaxed: bool, failed: bool) -> None:
        """The outermost transaction's ROLLBACK (`failed`) or COMMIT, under the lock. A lazy
        one that sent nothing hands its writes to the group (committed within `group_tick`),
        or, when it turned durable (want_sync), commits them with the group now."""
        self._depth = 0
        self._lazy = False
        if failed:
            self._forget()  # the copies may hold what is rolled back now
            self._txq = []
            if self._started:
                self._db.execute("ROLLBACK")
                # the group's writes sent in this transaction are not this one's to lose
                self._pending = self._inflight + self._pending
            self._inflight = []
            self._started = True
            return
        if not self._started:
            items, self._txq = self._txq, []
            if not self._sync:
                self._started = True
                if items:
                    if not self._pending:
                        self._pending_since = time.monotonic()
                        self._arm()
                    self._pending.extend(items)
                if self._pending and time.monotonic() - self._pending_since >= self.group_tick:
                    self._flush_group()
                return
            self._txq = items  # durable after all: BEGIN at FULL, the group with it
            try:
                self._start()
            except BaseException:
                self._txq, self._started = [], True
                raise
        self._inflight = []
        try:
            if not self._sync and self.dialect != "sqlite":
                self._db.execute("SET LOCAL synchronous_commit = off")
            self._db.execute("COMMIT")
        except BaseException:
            self._forget()
            raise
        if not self._full and self._sync:
            self._flush()

    def _flush_group(self) -> None:
        """Under the lock, outside a transaction: the group's deferred writes in one relaxed
        transaction (a failure drops them with the in-memory copies, as a failed cycle's
        commit lost its own writes)."""
        if not self._pending:
            return
        items, self._pending = self._pending, []
        self._level("NORMAL")
        self._db.execute(self._begin)
        try:
            _send(self._db, items)
            self._db.execute("COMMIT")
        except BaseException:
            self._forget()
            self._rollback_quietly()
            raise

    def _rollback_quietly(self) -> None:
        """ROLLBACK after a failure (SQLite: none may be open when the BEGIN failed)."""
        try:
            self._db.execute("ROLLBACK")
        except SqliteError:
            log.debug("state: rollback after a failed group commit", exc_info=True)

    def _arm(self) -> None:
        """Under the lock, when the group gets its first write: the flusher commits it
        `group_tick` later unless a cycle's transaction did it before. One thread per State,
        started on the first deferred write; it holds the State weakly (one never closed
        goes with its thread)."""
        if self._flusher is None:
            self._flusher = threading.Thread(
                target=_flush_loop,
                args=(weakref.ref(self), self._cond),
                name="dbwatch-state-group",
                daemon=True,
            )
            self._flusher.start()
        elif self._deep:
            self._cond.notify()

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
        version = self._read_version()
        if version is None or version != self._data_version:
            self._forget()
            self._data_version = version
        self._version_checked = self._depth > 0
        return version is not None

    def _moved(self) -> bool:
        """Whether another connection committed since `_memo_ok` last looked."""
        version = self._read_version()
        return version is None or version != self._data_version

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
        """Inside a lazy transaction a read sends its BEGIN and the deferred writes first;
        outside, a read of a table writes wait for commits them first."""
        with self._lock:
            if not self._started:
                self._start()
            elif self._pending and any(t in sql for t in _DEFERRED_TABLES):
                self._flush_group()
            return list(self._db.execute(sql, tuple(params)).fetchall())


def _flush_loop(ref: weakref.ReferenceType[StateBase], cond: threading.Condition) -> None:
    """The flusher: commits the group `group_tick` after its first write (StateBase._arm).
    While cycles come it looks every half tick, so a cycle never has to wake it; after
    `_IDLE_WAIT` with nothing to commit it sleeps until woken (`_deep`)."""
    batch_thread()  # its wake never preempts a cycle (batch.py)
    idle_since = time.monotonic()
    with cond:
        while True:
            st = ref()
            if st is None or st._closed:
                return
            now = time.monotonic()
            if st._pending:
                idle_since = now
                wait = st._pending_since + st.group_tick - now
                if wait <= 0:
                    try:
                        st._flush_group()
                    except Exception:
                        log.exception("state: committing the deferred writes failed")
                    continue
            elif now - idle_since < _IDLE_WAIT:
                wait = st.group_tick / 2
            else:
                st._deep, wait = True, _IDLE_WAIT
            del st
            cond.wait(wait)
            st = ref()
            if st is not None:
                st._deep = False
            del st


def _send(db: StateConn, items: list[_Item]) -> None:
    """Deferred writes, one executemany per statement (in the order each first came; the
    rows of one statement in their order). Safe because every deferred statement commutes
    with the others: they are `_write`'s — points appended, a target's cycle row, a
    finding's last_seen by fingerprint — each on its own table."""
    if len(items) == 1:
        sql, params, many = items[0]
        if many:
            db.executemany(sql, params)
        else:
            db.execute(sql, params)
        return
    runs: dict[str, list[Sequence[Param]]] = {}
    for sql, params, many in items:
        rows = runs.get(sql)
        if rows is None:
            rows = runs[sql] = []
        if many:
            rows.extend(params)
        else:
            rows.append(params)
    for sql, rows in runs.items():
        db.executemany(sql, rows)


class _Started:
    """What a SQLite transaction hands out: a statement sent through it first sends the lazy
    transaction's BEGIN and the writes deferred before it (in order)."""

    __slots__ = ("state",)

    def __init__(self, state: StateBase) -> None:
        self.state = state

    def execute(self, sql: str, params: Sequence[Param] = (), /) -> Cursor:
        st = self.state
        if not st._started:
            st._start()
        return st._db.execute(sql, params)

    def executemany(self, sql: str, seq: Iterable[Sequence[Param]], /) -> object:
        st = self.state
        if not st._started:
            st._start()
        return st._db.executemany(sql, seq)

    def close(self) -> None:
        self.state.close()


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
            return st._view
        try:
            self.relaxed = st._open(self.durable)
        except BaseException:
            st._lock.release()
            raise
        self.outer = True
        return st._view

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
