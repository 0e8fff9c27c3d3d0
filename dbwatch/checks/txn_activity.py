"""What an open transaction did: PostgreSQL — the relations it holds locks on and in which
modes, written (backend_xid) or only a snapshot (backend_xmin), the statements seen for it;
MySQL/MariaDB — its statements from performance_schema back to the one that opened it.
Each engine's part returns (Origin, evidence.transaction, the phrase of its first statement).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import TYPE_CHECKING

from ..durations import format_duration
from ..frozen import frozen
from ..snapshot.my import MyThread
from ..snapshot.origin import (
    MyConnectAttr,
    MyTxnDetail,
    MyTxnEvent,
    MyTxnStatement,
    PgTxnDetail,
    PgTxnLock,
    PgTxnStatement,
)
from ..snapshot.values import iso
from ..sqlpatterns.fingerprint import quick_kind
from ..sqlpatterns.transactions import NON_DATA
from .origin import Origin, pg_unknown, short, tag_unknown, tags_of

if TYPE_CHECKING:  # a MySQL audit imports no PostgreSQL rows
    from ..snapshot.pg import PgSession

LOCKS_SHOWN = 12  # relation locks listed per transaction
STATEMENTS_SHOWN = 16
_BOUNDARY = frozenset({"begin", "commit", "rollback", "autocommit_on", "autocommit_off", "ddl"})
# what a relation lock mode says the transaction did to the table
_MODE_DOES = {
    "AccessShareLock": "read",
    "RowShareLock": "locked rows (SELECT … FOR UPDATE/SHARE)",
    "RowExclusiveLock": "wrote rows",
    "ShareUpdateExclusiveLock": "VACUUM/ANALYZE/CREATE INDEX CONCURRENTLY",
    "ShareLock": "CREATE INDEX",
    "ShareRowExclusiveLock": "a trigger/constraint change",
    "ExclusiveLock": "REFRESH MATERIALIZED VIEW CONCURRENTLY or an explicit LOCK",
    "AccessExclusiveLock": "DDL or LOCK TABLE",
}


@frozen
class Activity:
    origin: Origin
    transaction: dict[str, object]
    opened_with: str | None  # the first statement, quoted short
    on: tuple[str, ...] = ()  # relations it locked (PostgreSQL)
    age: float | None = None
    idle: float | None = None

    def phrase(self, with_idle: bool = True, with_client: bool = True) -> str | None:
        """'Shop, job ReindexCatalog, opened with `SELECT … FOR UPDATE` on orders 41 min
        ago, idle 39 min' — only what is known. Without `with_client`, a name the client gave
        itself alone (already in the summary as application_name) is left out."""
        named = self.origin.phrase() if (with_client or self.origin.tags) else None
        parts = [named] if named else []
        if self.opened_with:
            on = f" on {', '.join(self.on[:3])}" if self.on else ""
            ago = f" {format_duration(self.age)} ago" if self.age else ""
            parts.append(f"opened with `{self.opened_with}`{on}{ago}")
        if with_idle and self.idle is not None and self.idle >= 1:
            parts.append(f"idle {format_duration(self.idle)}")
        return ", ".join(parts) if parts else None


TxnKey = tuple[int, datetime | None, datetime | None]  # pid, backend_start, xact_start


@frozen
class PgIndex:
    """pg.txn_detail by backend, built once per snapshot (300 findings must not each scan it)."""

    detail: PgTxnDetail | None
    locks: dict[int, list[PgTxnLock]]
    statements: dict[TxnKey, list[PgTxnStatement]]

    @classmethod
    def of(cls, detail: PgTxnDetail | None) -> PgIndex:
        locks: dict[int, list[PgTxnLock]] = defaultdict(list)
        stmts: dict[TxnKey, list[PgTxnStatement]] = defaultdict(list)
        for lk in detail.locks if detail else ():
            locks[lk.pid].append(lk)
        for st in detail.statements if detail else ():
            stmts[(st.pid, st.backend_start, st.xact_start)].append(st)
        return cls(detail, locks, stmts)


@frozen
class MyIndex:
    """my.txn_detail by thread, built once per snapshot."""

    detail: MyTxnDetail | None
    attrs: dict[int, list[MyConnectAttr]]
    statements: dict[int, list[MyTxnStatement]]
    events: dict[int, MyTxnEvent]

    @classmethod
    def of(cls, detail: MyTxnDetail | None) -> MyIndex:
        attrs: dict[int, list[MyConnectAttr]] = defaultdict(list)
        stmts: dict[int, list[MyTxnStatement]] = defaultdict(list)
        for a in detail.attrs if detail else ():
            attrs[a.thread_id].append(a)
        for st in detail.statements if detail else ():
            stmts[st.thread_id].append(st)
        events = {e.thread_id: e for e in (detail.transactions if detail else ())}
        return cls(detail, attrs, stmts, events)


def pg_activity(s: PgSession, idx: PgIndex) -> Activity:
    detail = idx.detail
    seen = idx.statements.get((s.pid, s.backend_start, s.xact_start), [])
    locks = idx.locks.get(s.pid, [])
    remembered = detail is not None and detail.remembered
    seen_as = "statement seen first" if remembered else "statement seen"
    ordered = [(seen_as, st.query) for st in seen]
    tags, label = tags_of([*ordered, ("current statement", s.query)])
    origin = Origin(
        tags=tags,
        tags_from=label,
        application_name=s.application,
        client_addr=s.client_addr,
        host=s.host,
        unknown=tuple(
            tag_unknown(tags, [q for _, q in ordered if q] + ([s.query] if s.query else []))
            + pg_unknown(s.application, s.host, s.client_addr)
        ),
    )
    held = [lk for lk in locks if lk.granted]
    relations = tuple(dict.fromkeys(lk.relation for lk in held if lk.relation))
    idle = s.state_seconds if s.idle_in_transaction else None
    txn: dict[str, object] = {
        "started": iso(s.xact_start),
        "age": format_duration(s.xact_seconds),
        "idle": format_duration(idle) if idle is not None else None,
        "state": s.state,
        "wrote": s.backend_xid is not None,
        "holds_snapshot": s.backend_xmin is not None,
        "pins": _pins(s),
        "locks": [
            {
                "relation": lk.relation,
                "mode": lk.mode,
                "granted": lk.granted,
                "locks": lk.locks,
                "means": _MODE_DOES.get(lk.mode or "", lk.locktype),
            }
            for lk in locks[:LOCKS_SHOWN]
        ],
        "locks_not_shown": max(len(locks) - LOCKS_SHOWN, 0),
        "statements": [
            {"query": st.query, "first_seen": st.first_seen, "last_seen": st.last_seen}
            for st in seen[:STATEMENTS_SHOWN]
        ],
        "first_statement": seen[0].query if seen and remembered else None,
        "statements_source": _pg_source(detail),
    }
    if detail is None:
        txn["locks_unknown"] = "pg.txn_detail was not read (see DW001/DW002)"
    first = seen[0].query if seen and remembered else None
    return Activity(origin, txn, short(first), relations, s.xact_seconds, idle)


def _pins(s: PgSession) -> str:
    if s.backend_xid is not None:
        return f"it has written (xid {s.backend_xid}): it holds the xmin horizon and its row locks"
    if s.backend_xmin is not None:
        return "it has not written; it holds a snapshot (backend_xmin) that pins the horizon"
    return "it has not written and holds no snapshot now (READ COMMITTED, idle): only its locks"


def _pg_source(detail: PgTxnDetail | None) -> str:
    if detail is None:
        return "unknown: pg.txn_detail was not read"
    if detail.remembered:
        return (
            "the daemon's memory: every distinct statement pg_stat_activity showed for this "
            "transaction (pid, backend_start, xact_start) since it was first seen"
        )
    return (
        "this look only: pg_stat_activity shows a session's latest statement; the daemon "
        "(dbwatch watch) remembers each one it sees across cycles"
    )


def my_activity(t: MyThread, idx: MyIndex) -> Activity:
    detail, thread = idx.detail, t.thread_id
    attrs = tuple((a.name, a.value) for a in idx.attrs.get(thread, ()))
    rows = idx.statements.get(thread, [])
    event = idx.events.get(thread)
    stmts, source, note = _my_transaction(rows, event, detail)
    # with the opening statement out of the history, none of those kept is the first
    first = None if note else next((s for s in stmts if _data(s)), None)
    if first is not None and not first.sql_text:
        first, note = None, PREPARED_NOTE
    ordered = [("first statement", first.sql_text if first else None)]
    ordered += [("transaction statement", s.sql_text) for s in stmts]
    ordered += [("current statement", t.query)]
    tags, label = tags_of(ordered)
    addr = (t.host or "").rsplit(":", 1)[0] or None
    unknown = tag_unknown(tags, [s for _, s in ordered if s])
    if not tags and any(not s.sql_text for s in stmts):
        unknown = [f"framework tags: {PREPARED_NOTE}"]
    if detail is None:
        unknown.append("connection attributes: my.txn_detail was not read (see DW001/DW002)")
    elif detail.attrs_off:
        unknown.append(f"connection attributes: {detail.attrs_off}")
    elif not attrs:
        unknown.append(
            "connection attributes: the client sent no program_name (MariaDB Connector/C and "
            "many drivers send none unless the application sets it)"
        )
    origin = Origin(
        tags=tags,
        tags_from=label,
        attrs=attrs,
        client_addr=addr,
        host=t.host,
        unknown=tuple(unknown),
    )
    idle = float(t.command_seconds or 0) if t.sleeping else None
    txn: dict[str, object] = {
        "started": iso(t.trx_started),
        "wrote": bool(t.trx_rows_modified),
        "age": format_duration(float(t.trx_seconds or 0)),
        "idle": format_duration(idle) if idle is not None else None,
        "rows_locked": t.trx_rows_locked,
        "rows_modified": t.trx_rows_modified,
        "tables_locked": t.trx_tables_locked,
        "statements": [
            {
                "event_id": s.event_id,
                "sql_text": s.sql_text or PREPARED_TEXT,
                "seconds_ago": None if s.seconds_ago is None else round(s.seconds_ago, 1),
            }
            for s in stmts[:STATEMENTS_SHOWN]
        ],
        "first_statement": first.sql_text if first else None,
        "statements_source": source,
        "statements_unknown": note,
    }
    age = float(t.trx_seconds or 0) or None
    return Activity(origin, txn, short(first.sql_text if first else None), (), age, idle)


PREPARED_TEXT = "(a prepared statement: performance_schema keeps no text for it)"
PREPARED_NOTE = (
    "the transaction's first statement was a prepared statement run over the binary protocol: "
    "performance_schema keeps no text for it (PHP PDO's default in Laravel; set "
    "PDO::ATTR_EMULATE_PREPARES => true in the connection's options to see statements and tags)"
)


def _data(s: MyTxnStatement) -> bool:
    """A statement that does something (a textless prepared execution may)."""
    return not s.sql_text or quick_kind(s.sql_text) not in NON_DATA


def _my_transaction(
    rows: list[MyTxnStatement], event: object, detail: MyTxnDetail | None
) -> tuple[list[MyTxnStatement], str | None, str | None]:
    """(this transaction's statements, how they were told apart, what is missing and why)."""
    if detail is None:
        return [], None, "my.txn_detail was not read (see DW001/DW002)"
    if detail.history_off:
        return [], None, detail.history_off
    event_id = getattr(event, "event_id", None)
    if isinstance(event_id, int) and event_id and (getattr(event, "state", "") or "") == "ACTIVE":
        mine = [s for s in rows if s.event_id > event_id]
        return mine, "events_transactions_current (statements after the transaction began)", None
    for i in range(len(rows) - 1, -1, -1):
        kind = quick_kind(rows[i].sql_text)
        if kind in _BOUNDARY:
            src = f"statement history after its {kind.upper()} (event {rows[i].event_id})"
            return rows[i + 1 :], src, None
    size = detail.history_size
    if rows and size and len(rows) >= size:
        return (
            rows,
            None,
            (
                f"the opening statement is older than the last {size} statements "
                "performance_schema keeps per thread (performance_schema_events_statements_"
                "history_size, a restart to raise); with events_transactions_current on, the "
                f"transaction's own statements are told apart. {detail.transactions_off or ''}"
            ).strip(),
        )
    if not rows:
        return [], None, "performance_schema kept no statement of this thread"
    return rows, "statement history (no BEGIN or COMMIT kept: every statement since connect)", None
