"""Typed rows of the my snapshot sections (see sections.py): MySQL/MariaDB threads with
their InnoDB transactions, lock waits, the InnoDB monitor status and counters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from ..frozen import frozen
from ..parsers.deadlock_model import Deadlock
from ..parsers.innodb_deadlock import parse_deadlock_lines
from ..parsers.innodb_status import parse_status
from ..parsers.innodb_trx import TrxInfo
from .identity import SessionIdentity
from .sections import one_of, rows_of, section
from .values import (
    JSONObject,
    Number,
    Read,
    Row,
    TypedRow,
    as_json,
    as_row,
    as_rows,
    opt_int,
    opt_num,
    opt_str,
)

OLDEST_KEPT = 20  # transactions of the status text's list kept, longest-active first


def trx_info(row: Row) -> TrxInfo:
    g = row.get
    return TrxInfo(
        trx_id=opt_str(g("trx_id")),
        state=opt_str(g("state")),
        active_seconds=opt_int(g("active_seconds")),
        thread_id=opt_int(g("thread_id")),
        user=opt_str(g("user")),
        host=opt_str(g("host")),
        query=opt_str(g("query")),
    )


def deadlock(v: object) -> Deadlock | None:
    """A parsed deadlock, or the text of one (a LATEST DETECTED DEADLOCK section's body or an
    error-log block, as a test case gives it) parsed; None for nothing."""
    if v is None or isinstance(v, Deadlock):
        return v
    if isinstance(v, str):
        return parse_deadlock_lines(v.splitlines())
    raise TypeError(f"a deadlock is a parsers Deadlock or its report text, not {type(v).__name__}")


def _seq(v: object) -> Sequence[object]:
    if isinstance(v, Sequence) and not isinstance(v, (str, bytes, bytearray)):
        return v
    return ()


# the columns of trx.sql: MY201's evidence "oldest" shows them, and only them
TRX_COLUMNS = (
    "trx_id",
    "trx_state",
    "trx_started",
    "trx_seconds",
    "thread_id",
    "trx_query",
    "trx_operation_state",
    "trx_tables_locked",
    "trx_lock_structs",
    "trx_rows_locked",
    "trx_rows_modified",
    "trx_isolation_level",
    "user",
    "host",
    "db",
    "command",
    "command_seconds",
    "state",
    "info",
)


@frozen
class MyThread(
    TypedRow,
    trx_seconds=Read(convert=opt_num),
    command_seconds=Read(convert=opt_num),
):
    """One MySQL/MariaDB thread with its InnoDB transaction, if it has one: a my.trx row
    (trx.sql: transactions only) and a row of terminate's listing (terminate_threads.sql:
    every thread). What MY001/MY002/MY201 read and what terminate's candidate (guards.Session)
    is made of; with trx_id, thread_id is the session's identity. `trx_started` is read once
    into a datetime (values.opt_datetime) and written as ISO 8601 by to_json."""

    thread_id: int
    trx_id: str | None = None  # None: no InnoDB transaction
    trx_state: str | None = None  # RUNNING | LOCK WAIT | ...
    trx_started: datetime | None = None
    trx_seconds: Number | None = None
    trx_query: str | None = None
    trx_operation_state: str | None = None
    trx_tables_locked: int | None = None
    trx_lock_structs: int | None = None
    trx_rows_locked: int | None = None
    trx_rows_modified: int | None = None
    trx_isolation_level: str | None = None
    user: str | None = None
    host: str | None = None
    db: str | None = None  # the thread's default schema
    command: str | None = None  # PROCESSLIST COMMAND: Sleep, Query, ...
    command_seconds: Number | None = None  # PROCESSLIST TIME
    state: str | None = None  # PROCESSLIST STATE
    info: str | None = None  # PROCESSLIST INFO: the statement now
    query_id: int | None = None  # MariaDB QUERY_ID (terminate's listing)
    is_self: bool = False
    # what terminate's listing adds from its other reads (never in the my.trx section)
    program: str | None = None  # the client's program_name (performance_schema)
    superuser: bool | None = None  # the user has SUPER; None: grants not readable

    def identity(self, engine: str, server: str) -> SessionIdentity:
        """Thread id + InnoDB trx id (+ the default schema): the one place a MySQL/MariaDB
        SessionIdentity is made from a thread."""
        return SessionIdentity(
            engine=engine,
            server=server,
            database=self.db,
            thread_id=self.thread_id,
            trx_id=self.trx_id,
        )

    @property
    def sleeping(self) -> bool:
        return self.command == "Sleep"

    @property
    def query(self) -> str | None:
        """The transaction's statement, else the thread's."""
        return self.trx_query or self.info

    def to_json(self) -> JSONObject:
        """The trx.sql columns (MY201's evidence "oldest")."""
        return {name: as_json(getattr(self, name)) for name in TRX_COLUMNS}


@frozen
class MyLockWait(
    TypedRow,
    wait_seconds=Read(convert=opt_num),
    waiting_trx_seconds=Read(convert=opt_num),
    blocking_trx_seconds=Read(convert=opt_num),
    blocking_command_seconds=Read(convert=opt_num),
):
    """One InnoDB lock wait (lock_waits_*.sql): the waiter, the lock, the blocker."""

    waiting_thread_id: int | None = None
    waiting_trx_id: str | None = None
    wait_seconds: Number | None = None
    waiting_trx_seconds: Number | None = None
    waiting_query: str | None = None
    waiting_user: str | None = None
    waiting_host: str | None = None
    locked_table: str | None = None  # schema.table
    locked_index: str | None = None
    lock_mode: str | None = None
    lock_type: str | None = None
    blocking_thread_id: int | None = None
    blocking_trx_id: str | None = None
    blocking_trx_seconds: Number | None = None
    blocking_query: str | None = None
    blocking_trx_state: str | None = None
    blocking_user: str | None = None
    blocking_host: str | None = None
    blocking_command: str | None = None
    blocking_command_seconds: Number | None = None

    def blocker_identity(self, engine: str, server: str, root: int) -> SessionIdentity | None:
        """The chain's root `root` (this row's blocker) with the transaction it holds: the
        session a terminate of MY101 ends; None when the blocker's trx id is unknown."""
        if self.blocking_trx_id is None:
            return None
        return SessionIdentity(
            engine=engine, server=server, thread_id=root, trx_id=self.blocking_trx_id
        )


@frozen
class MyLockWaits:
    """The my.lock_waits section: the SQL file that read them (None: the server has no
    lock-wait table) and the waits."""

    source: str | None = None
    waits: tuple[MyLockWait, ...] = ()

    @classmethod
    def build(cls, data: object) -> MyLockWaits:
        if isinstance(data, MyLockWaits):
            if data.waits or type(data) is not MyLockWaits:
                return data
            # no waits (an idle server): one object per source, read after read (NO_ROWS)
            return _NO_WAITS.get(data.source) or _NO_WAITS.setdefault(data.source, data)
        row = as_row(data)
        waits = row.get("waits")
        source = opt_str(row.get("source"))
        if not waits and cls is MyLockWaits:
            return _NO_WAITS.get(source) or _NO_WAITS.setdefault(source, cls(source, ()))
        if isinstance(waits, tuple) and all(isinstance(w, MyLockWait) for w in waits):
            return cls(source, waits)
        return cls(source, tuple(MyLockWait.from_row(w) for w in as_rows(waits)))


# MyLockWaits without waits, per source (a few SQL file names)
_NO_WAITS: dict[str | None, MyLockWaits] = {}


@frozen
class InnodbCounters(
    TypedRow,
    deadlocks=Read(column="innodb_deadlocks"),
    history_list_length=Read(column="innodb_history_list_length"),
):
    """The my.innodb_counters section: Innodb_deadlocks and the history list length
    (status variables on MariaDB, INNODB_METRICS on MySQL 8); None when not read."""

    deadlocks: int | None = None
    history_list_length: int | None = None


def _deadlocks(v: object) -> tuple[Deadlock, ...]:
    return tuple(d for d in map(deadlock, _seq(v)) if d is not None)


@frozen
class ErrorLogDeadlocks(TypedRow, deadlocks=Read(convert=_deadlocks)):
    """MySQL 8.0.22+: the deadlocks in performance_schema.error_log, as parsed (diagnosed
    where they are used: deadlocks.record); `available` False with why when it cannot be read."""

    available: bool = False
    deadlocks: tuple[Deadlock, ...] = ()
    error: str | None = None
    grant: str | None = None


def _oldest(v: object) -> tuple[TrxInfo, ...]:
    return tuple(t if isinstance(t, TrxInfo) else trx_info(as_row(t)) for t in _seq(v))


@frozen
class InnodbStatusSection(
    TypedRow,
    deadlock=Read(convert=deadlock),
    oldest_transactions=Read(convert=_oldest),
    error_log=Read(convert=one_of(ErrorLogDeadlocks)),
):
    """The my.innodb_status section: what SHOW ENGINE INNODB STATUS says, parsed once
    (parsers.innodb_status) at the probe. `deadlock` is the latest deadlock as the parser
    read it (its diagnosis and key are made where it is used: deadlocks.record);
    `oldest_transactions` the parser's own TrxInfo entries, longest-active first."""

    at: str | None = None  # the monitor output's timestamp (server time)
    truncated: bool = False
    history_list_length: int | None = None
    deadlock: Deadlock | None = None
    oldest_transactions: tuple[TrxInfo, ...] = ()
    error_log: ErrorLogDeadlocks = ErrorLogDeadlocks()

    @classmethod
    def from_text(cls, text: str) -> InnodbStatusSection:
        """The section from the Status column of SHOW ENGINE INNODB STATUS."""
        st = parse_status(text)
        trxs = sorted(
            (t for t in st.transactions if t.active_seconds is not None),
            key=lambda t: -(t.active_seconds or 0),
        )[:OLDEST_KEPT]
        return cls(
            at=st.at,
            truncated=st.truncated,
            history_list_length=st.history_list_length,
            deadlock=st.deadlock,
            oldest_transactions=tuple(replace(t, query=(t.query or "")[:1024]) for t in trxs),
        )


MY_TRX = section("my.trx", rows_of(MyThread))
MY_LOCK_WAITS = section("my.lock_waits", MyLockWaits.build)
MY_INNODB_STATUS = section("my.innodb_status", one_of(InnodbStatusSection))
MY_INNODB_COUNTERS = section("my.innodb_counters", one_of(InnodbCounters))
