"""MySQL/MariaDB KILL that never hits the wrong transaction.

`INFORMATION_SCHEMA.INNODB_TRX` is served from a cache that InnoDB refreshes only after
0.1 s without readers, so the listing may show a transaction that has already ended, and a
re-read of the same table may show the same stale row. The identity is therefore
re-established from sources that are read live, in this order:

1. the thread in `PROCESSLIST` (user, command, and on MariaDB `QUERY_ID`, which moves with
   every statement the thread starts; on MariaDB the listing's own live PROCESSLIST row);
2. its transaction in `SHOW ENGINE INNODB STATUS` (built from InnoDB's own transaction
   list under its mutex, not from the cache): exactly one entry for the thread, with the
   selected trx id (read-only transactions, which have no id: an age that only the
   selected transaction can have) and the query id read in step 1;
3. the kill itself: on MariaDB one server-side statement kills only if `QUERY_ID`,
   `COMMAND` and `USER` are still those of step 1 (no statement since, so the same
   transaction); on MySQL, which has neither `QUERY_ID` nor anonymous blocks, `KILL` follows
   step 2 at once (a window of one round trip remains: untested live, no MySQL 8 here).

Whenever a step cannot establish the identity, nothing is killed (`gone`, or
`skipped_protected` when a live read shows a dump statement).
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import replace

from ..errors import ProbeError
from ..frozen import frozen
from ..parsers.innodb_trx import parse_transaction_list
from ..snapshot.my import MyThread
from ..snapshot.values import as_row, to_int, to_str
from ..targets import Connection
from .guards import Decision, Session, is_dump_statement
from .statements import action_sql

log = logging.getLogger(__name__)
GONE = "no longer the same session or transaction at the moment of the kill; nothing signalled"
_MY_UNKNOWN_THREAD, _MY_REFUSED = 1094, (1095, 1227)
_LIST = "LIST OF TRANSACTIONS FOR EACH SESSION"
_MAX_STATUS_LINES = 2_000_000


@frozen
class LiveTrx:
    """A thread's entry in the live InnoDB transaction list."""

    trx_id: str | None  # None: a read-only transaction (no id assigned)
    active_seconds: int | None
    query_id: int | None  # None: the thread line printed none readable (never matches)


def live_transactions(text: str, thread_id: int) -> list[LiveTrx]:
    """Every entry of SHOW ENGINE INNODB STATUS's transaction list naming this thread, read
    by the one transaction-list parser (parsers.innodb_trx).

    Query text sits inside entries and is untrusted: more than one entry for the thread
    (a forged header in someone's query) makes the caller refuse, never guess."""
    lines = text.split("\n", _MAX_STATUS_LINES + 1)[: _MAX_STATUS_LINES + 1]
    start = next((n for n, line in enumerate(lines) if line.startswith(_LIST)), None)
    if start is None:
        return []
    _, entries = parse_transaction_list(lines, start + 1, len(lines))
    return [
        LiveTrx(t.trx_id, t.active_seconds, t.query_id) for t in entries if t.thread_id == thread_id
    ]


def same_live_trx(s: Session, live: LiveTrx, elapsed: float) -> bool:
    """The live entry is the listed transaction. With a trx id: the same id. Read-only
    transactions have none (MariaDB lists 0): only an age that a transaction begun since
    the listing cannot have (both ages are whole seconds)."""
    listed = s.trx_id
    if listed not in (None, "0") and live.trx_id is not None:
        return live.trx_id == listed
    if s.age is None or live.active_seconds is None:
        return False
    return live.active_seconds >= s.age - 1 and s.age - 1 > elapsed + 1


def my_kill(conn: Connection, d: Decision, cancel: bool, include_backups: bool) -> Decision:
    s = d.session
    tid = int(s.thread_id or 0)  # an int, bound: never text from the server spliced in
    try:
        return _kill(conn, d, tid, cancel, include_backups)
    except ProbeError as exc:
        code = _my_code(exc.detail)
        if code == _MY_UNKNOWN_THREAD:
            return replace(d, action="gone", reason=GONE)
        if code in _MY_REFUSED and conn.flavour == "mysql" and _rds_kill(conn, tid, cancel):
            return replace(d, action="cancelled" if cancel else "terminated")
        return replace(d, action="failed", error=exc.detail)


def _kill(conn: Connection, d: Decision, tid: int, cancel: bool, include_backups: bool) -> Decision:
    s = d.session
    now: MyThread  # the thread as PROCESSLIST shows it at the kill
    if conn.flavour == "mariadb" and s.query_id is not None and isinstance(s.row, MyThread):
        # the listing read PROCESSLIST live: if the InnoDB list shows this same QUERY_ID,
        # no statement has started since, and what the guards saw still holds
        now = s.row
    else:
        pre = conn.rows(action_sql(conn, "terminate_recheck"), {"thread_id": tid})
        if not pre:
            return replace(d, action="gone", reason=GONE)
        now = MyThread.from_row(as_row(pre[0]))
        if now.user != s.user:
            return replace(d, action="gone", reason=GONE)
        if not include_backups and is_dump_statement(now.info or ""):
            why = "backup: its statement now is a dump statement (use --include-backups)"
            return replace(d, action="skipped_protected", reason=why)
    status = conn.rows("SHOW ENGINE INNODB STATUS")
    text = to_str(as_row(status[0]).get("status")) if status else ""
    entries = live_transactions(text, tid)
    if len(entries) != 1:
        if entries:
            why = f"{len(entries)} entries for thread {tid} in the InnoDB status: ambiguous"
            return replace(d, action="gone", reason=f"identity not established ({why})")
        return replace(d, action="gone", reason=GONE)
    live = entries[0]
    elapsed = time.monotonic() - s.seen_at if s.seen_at is not None else 0.0
    if not same_live_trx(s, live, elapsed):
        return replace(d, action="gone", reason=GONE)
    if conn.flavour == "mariadb":
        if live.query_id is None or now.query_id is None or now.query_id != live.query_id:
            return replace(d, action="gone", reason=GONE)  # a statement in between
        name = "terminate_kill_query" if cancel else "terminate_kill"
        params = {
            "thread_id": tid,
            "query_id": live.query_id,
            "command": now.command or "",
            "user": now.user or "",
        }
        rows = conn.rows(action_sql(conn, name), params)
        if not rows or not to_int(rows[0].get("matched")):
            return replace(d, action="gone", reason=GONE)
    else:
        conn.execute("KILL QUERY %s" if cancel else "KILL %s", (tid,))
    return replace(d, action="cancelled" if cancel else "terminated")


def _my_code(detail: str) -> int:
    m = re.match(r"\((\d+)\)", detail)
    return int(m.group(1)) if m else 0


def _rds_kill(conn: Connection, tid: int, cancel: bool) -> bool:
    """RDS-style servers refuse KILL of other users' threads; their procedures do it."""
    try:
        names = {r["name"] for r in conn.rows(action_sql(conn, "terminate_rds_routines"))}
    except ProbeError:
        return False
    proc = "rds_kill_query" if cancel else "rds_kill"
    if proc not in names:
        return False
    try:
        conn.execute(f"CALL mysql.{proc}(%s)", (tid,))
    except ProbeError as exc:
        log.warning("mysql.%s(%s) on %s failed: %s", proc, tid, conn.spec.name, exc.detail)
        return False
    return True
