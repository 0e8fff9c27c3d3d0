"""Typed rows of what an open transaction did and where it came from (see sections.py):
pg.txn_detail (its locks, the statements seen for it across cycles) and my.txn_detail
(connection attributes, performance_schema statement history, the open transaction event)."""

from __future__ import annotations

from datetime import datetime

from ..frozen import frozen
from .sections import one_of, section
from .values import Read, TypedRow, built


@frozen
class PgTxnLock(TypedRow):
    """Locks of one kind one backend holds (or waits for) on one relation (txn_locks.sql)."""

    pid: int
    backend_start: datetime | None = None
    xact_start: datetime | None = None
    locktype: str | None = None
    relation: str | None = None  # schema.table; None when not in the probed database
    relkind: str | None = None
    mode: str | None = None
    granted: bool | None = None
    locks: int = 1


@frozen
class PgTxnStatement(TypedRow):
    """A statement seen for one transaction identity (pid, backend_start, xact_start), with
    the probe cycles that first and last saw it (ISO 8601)."""

    pid: int
    backend_start: datetime | None = None  # the PgSession's, as read (the join's key)
    xact_start: datetime | None = None
    query: str = ""
    first_seen: str | None = None
    last_seen: str | None = None


@frozen
class PgTxnDetail(
    TypedRow, locks=Read(convert=built(PgTxnLock)), statements=Read(convert=built(PgTxnStatement))
):
    """pg.txn_detail: the locks of backends whose transaction is at least `min_age` old, and
    (in the daemon) every distinct statement seen for each of those transactions."""

    locks: tuple[PgTxnLock, ...] = ()
    statements: tuple[PgTxnStatement, ...] = ()
    min_age: float = 0.0
    lock_cap: bool = False  # the lock rows hit their limit: some were not read
    remembered: bool = False  # statements kept across cycles (the daemon), else this cycle's


@frozen
class MyConnectAttr(TypedRow):
    """One connection attribute the client sent (performance_schema.session_connect_attrs)."""

    thread_id: int
    name: str = ""
    value: str = ""


@frozen
class MyTxnStatement(TypedRow):
    """One statement of a thread's performance_schema history (txn_statements.sql)."""

    thread_id: int
    event_id: int = 0
    sql_text: str = ""  # empty: a prepared statement's execution (no text kept)
    event_name: str | None = None
    nesting_event_id: int | None = None
    seconds_ago: float | None = None  # when it started, when the server's timer says


@frozen
class MyTxnEvent(TypedRow):
    """The thread's current transaction event (events_transactions_current)."""

    thread_id: int
    event_id: int = 0
    state: str | None = None
    access_mode: str | None = None
    autocommit: str | None = None


@frozen
class MyTxnDetail(
    TypedRow,
    attrs=Read(convert=built(MyConnectAttr)),
    statements=Read(convert=built(MyTxnStatement)),
    transactions=Read(convert=built(MyTxnEvent)),
):
    """my.txn_detail for the threads whose InnoDB transaction is at least `min_age` old:
    what their clients say they are, and the statements the server kept for them.
    `history_off` / `transactions_off`: why a source is empty, and the setting that fills it."""

    attrs: tuple[MyConnectAttr, ...] = ()
    statements: tuple[MyTxnStatement, ...] = ()
    transactions: tuple[MyTxnEvent, ...] = ()
    min_age: float = 0.0
    history_size: int = 0  # performance_schema_events_statements_history_size (per thread)
    history_off: str | None = None
    transactions_off: str | None = None
    attrs_off: str | None = None
    statement_cap: bool = False


PG_TXN_DETAIL = section("pg.txn_detail", one_of(PgTxnDetail))
MY_TXN_DETAIL = section("my.txn_detail", one_of(MyTxnDetail))
