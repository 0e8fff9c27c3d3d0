"""One InnoDB deadlock report (status section or error-log block) -> Deadlock.

Reads MySQL 5.0-9.x and MariaDB spellings line by line; never raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dbwatch.parsers.deadlock_model import Deadlock, DeadlockLock, DeadlockTrx
from dbwatch.parsers.innodb_common import (
    MAX_LINE,
    MAX_QUERY,
    is_record_dump,
    normalize_ts,
    parse_counts,
    parse_lock_line,
    parse_tables_in_use,
    parse_thread,
    parse_trx_header,
    squeeze,
)

__all__ = [
    "TOO_DEEP",
    "Deadlock",
    "DeadlockLock",
    "DeadlockTrx",
    "feed_line",
    "finish",
    "new_state",
    "parse_deadlock_lines",
]

MAX_TRX = 64  # a cycle longer than this is not printed by any server anyway
MAX_LOCKS = 1_000

_STAR_TRX = re.compile(r"^\*\*\* ?(?:\((\d+)\) ?)?TRANSACTION:")
_STAR_WAIT = re.compile(r"^\*\*\* ?(?:\((\d+)\) ?)?WAITING FOR THIS LOCK TO BE GRANTED")
_STAR_HOLDS = re.compile(r"^\*\*\* ?(?:\((\d+)\) ?)?HOLDS THE LOCK\(S\)")
_STAR_CONFLICT = re.compile(r"^\*\*\* ?(?:\((\d+)\) ?)?CONFLICTING WITH")
_VICTIM = re.compile(r"^\*\*\* ?WE ROLL BACK TRANSACTION \((\d+)\)")
_ROLES = (
    (_STAR_WAIT, "WAITING FOR THIS LOCK", "waiting"),
    (_STAR_HOLDS, "HOLDS THE LOCK", "holds"),
    (_STAR_CONFLICT, "CONFLICTING WITH", "conflicting"),
)
_STRUCT_START = ("***", "RECORD LOCKS", "TABLE LOCK", "TRANSACTION ", "LOCK WAIT ")
TOO_DEEP = "TOO DEEP OR LONG SEARCH IN THE LOCK TABLE WAITS-FOR GRAPH"


@dataclass
class _Trx:
    n: int
    fields: dict[str, Any] = field(default_factory=dict)
    query: list[str] = field(default_factory=list)
    query_len: int = 0
    in_query: bool = False


@dataclass
class _State:
    at: str | None = None
    too_deep: bool = False
    victim: int | None = None
    trxs: list[_Trx] = field(default_factory=list)
    locks: list[dict[str, Any]] = field(default_factory=list)
    role: str = ""  # waiting | holds | conflicting
    seen_first: bool = False
    done: bool = False  # the victim line was read: anything structural after it is suspect
    problems: list[str] = field(default_factory=list)
    roles_seen: set[tuple[int, str]] = field(default_factory=set)

    def suspect(self, why: str) -> None:
        if len(self.problems) < 8:
            self.problems.append(why)


def _on_star(st: _State, line: str) -> None:
    """`*** …` lines. Query text is data: a marker out of sequence, repeated, or after
    the victim line can only come from text inside a query, so the report is suspect."""
    # Each regex needs its literal: a substring test first skips the ones that cannot match.
    m = _STAR_TRX.match(line) if "TRANSACTION:" in line else None
    if m:
        if st.done:
            st.suspect("a transaction section after the victim line")
            return
        n = int(m.group(1)) if m.group(1) else len(st.trxs) + 1
        if n != len(st.trxs) + 1:
            st.suspect(f"transaction ({n}) out of sequence")
        if len(st.trxs) < MAX_TRX:
            st.trxs.append(_Trx(n))
        st.role = ""
        return
    if st.trxs:
        st.trxs[-1].in_query = False
    for rx, word, role in _ROLES:
        m = rx.match(line) if word in line else None
        if m:
            if not st.trxs:
                st.suspect(f"a {role} section before any transaction")
            if st.done:
                st.suspect(f"a {role} section after the victim line")
                return
            cur = st.trxs[-1].n if st.trxs else 0
            if m.group(1) and int(m.group(1)) != cur:
                st.suspect(f"({m.group(1)}) {role} section inside transaction ({cur})")
            if (cur, role) in st.roles_seen:
                st.suspect(f"two {role} sections for transaction ({cur})")
            st.roles_seen.add((cur, role))
            st.role = role
            return
    m = _VICTIM.match(line) if "WE ROLL BACK" in line else None
    if m:
        if not st.trxs:
            st.suspect("a victim line before any transaction")
        if st.done:
            st.suspect("two victim lines")
            return
        st.victim = int(m.group(1))
        st.role = ""
        st.done = True


def _on_lock(st: _State, lock: dict[str, Any]) -> None:
    if not st.trxs:
        st.suspect("a lock line before any transaction")
        return
    if len(st.locks) >= MAX_LOCKS:
        return
    cur = st.trxs[-1]
    if st.done:
        st.suspect("a lock line after the victim line")
        return
    if not st.role:
        st.suspect(f"a lock line inside transaction ({cur.n})'s header or query")
    elif st.role != "conflicting":
        own = cur.fields.get("trx_id")
        if own and lock["trx_id"] != own:
            st.suspect(f"a lock of trx {lock['trx_id']} listed under transaction ({cur.n})")
    cur.in_query = False
    lock["owner_n"] = cur.n
    lock["role"] = st.role
    lock["heap_nos"] = []
    st.locks.append(lock)


def _on_body(st: _State, line: str) -> None:
    """A line inside a transaction: header, counts, thread, query or record dump."""
    cur = st.trxs[-1]
    f = cur.fields
    if "trx_id" not in f:
        hd = parse_trx_header(line)
        if hd is not None:
            f.update(trx_id=hd.trx_id, active_seconds=hd.active_seconds, state=hd.state)
            return
    if "thread_id" not in f:
        if line.startswith("mysql tables in use"):
            tu = parse_tables_in_use(line)
            if tu:
                f["tables_in_use"], f["tables_locked"] = tu
            return
        counts = parse_counts(line)
        if counts is not None:
            f.update(counts)
            return
        th = parse_thread(line)
        if th is not None:
            f.update(th)
            cur.in_query = True
            return
    if line.startswith("Record lock, heap no ") and st.locks:
        heaps = st.locks[-1]["heap_nos"]
        num = line[21:].split(" ", 1)[0]
        if len(heaps) < 16 and num.isdigit():
            heaps.append(int(num))
        return
    if cur.in_query and cur.query_len < MAX_QUERY:
        cur.query.append(line)
        cur.query_len += len(line) + 1


def feed_line(st: _State, raw: str) -> None:
    """Consume one line of a deadlock report (already stripped of any log prefix)."""
    line = raw[:MAX_LINE].rstrip()
    if TOO_DEEP in line:
        st.too_deep = True
    if not st.seen_first and line.strip():
        st.seen_first = True
        at, _rest = normalize_ts(line)
        if at is not None:
            st.at = st.at or at
            return
    head = line.lstrip()
    if head[:1] == "*" and head.startswith("***"):
        _on_star(st, squeeze(head))
        return
    if not head:
        return
    if head[0] in "RT" and head.startswith(("RECORD LOCKS", "TABLE LOCK")):
        lock = parse_lock_line(head)
        if lock is not None:
            _on_lock(st, lock)
        return
    if not st.trxs or (line[0] == " " and is_record_dump(line)):
        return
    if st.done:
        if head.startswith(_STRUCT_START) or head.startswith(("MySQL thread", "MariaDB thread")):
            st.suspect("report lines after the victim line")
        return
    cur = st.trxs[-1]
    if cur.in_query:
        _on_body(st, line)
    else:
        _on_body(st, squeeze(head))


def new_state(at: str | None = None) -> _State:
    return _State(at=at)


def parse_deadlock_lines(lines: Iterable[str], at: str | None = None) -> Deadlock | None:
    """Parse the body of a LATEST DETECTED DEADLOCK section (or an error-log block)."""
    st = new_state(at)
    for raw in lines:
        feed_line(st, raw)
    return finish(st)


def finish(st: _State, live_trx_ids: frozenset[str] | None = None) -> Deadlock | None:
    """Build the Deadlock; `live_trx_ids` (from TRANSACTIONS) helps pick the victim."""
    if not st.trxs:
        return None
    by_id = {t.fields.get("trx_id"): t.n for t in st.trxs if t.fields.get("trx_id")}
    if st.victim and st.victim not in {t.n for t in st.trxs}:
        st.suspect(f"the victim ({st.victim}) is not one of the transactions printed")
    for t in st.trxs:
        if t.n == st.victim and "trx_id" not in t.fields:
            # Every printed transaction has its `TRANSACTION <id>` line: a victim without
            # one is a `*** (n) TRANSACTION:` marker from query text, never a transaction.
            st.suspect(f"the victim ({t.n}) has no transaction header")
    locks = _build_locks(st, by_id)
    victim, source = _pick_victim(st, live_trx_ids)
    ambiguous = "; ".join(dict.fromkeys(st.problems)) or None
    if ambiguous:
        victim, source = None, "none"
    trxs = []
    for t in st.trxs:
        f = t.fields
        tables = tuple(
            dict.fromkeys(
                f"{lk.db}.{lk.table}" if lk.db else str(lk.table)
                for lk in locks
                if lk.n == t.n and lk.table
            )
        )
        query = "\n".join(t.query).strip()[:MAX_QUERY] or None
        trxs.append(
            DeadlockTrx(
                n=t.n,
                trx_id=f.get("trx_id"),
                thread_id=f.get("thread_id"),
                user=f.get("user"),
                host=f.get("host"),
                query=query,
                active_seconds=f.get("active_seconds"),
                lock_structs=f.get("lock_structs"),
                row_locks=f.get("row_locks"),
                undo_entries=f.get("undo_entries"),
                tables=tables,
                victim=t.n == victim,
                state=f.get("state") or None,
                query_id=f.get("query_id"),
                ip=f.get("ip"),
                tables_in_use=f.get("tables_in_use"),
                tables_locked=f.get("tables_locked"),
            )
        )
    return Deadlock(
        at=st.at,
        victim=victim,
        transactions=tuple(trxs),
        locks=locks,
        too_deep=st.too_deep,
        truncated=st.victim is None and not st.too_deep,
        printed_victim=st.victim,
        victim_source=source,
        ambiguous=ambiguous,
    )


def _build_locks(st: _State, by_id: dict[Any, int]) -> tuple[DeadlockLock, ...]:
    """Attribute each lock to its transaction; MariaDB's CONFLICTING WITH lists the
    other transaction's locks, so ownership goes by trx id (0: not in the report)."""
    out: list[DeadlockLock] = []
    for lk in st.locks:
        owner = by_id.get(lk["trx_id"])
        if owner is None:
            owner = 0 if lk["role"] == "conflicting" else lk["owner_n"]
        waiting = lk["waiting"] or lk["role"] == "waiting"
        out.append(lock_from(lk, owner, waiting, tuple(lk["heap_nos"])))
    return tuple(dict.fromkeys(out))


def _weight(t: _Trx) -> tuple[int, int]:
    """InnoDB rolls back the lighter transaction (undo entries + locks); ties -> (1)."""
    f = t.fields
    return (f.get("undo_entries") or 0) + (f.get("lock_structs") or 0), t.n


def _pick_victim(st: _State, live: frozenset[str] | None) -> tuple[int | None, str]:
    """The printed number, checked against the live transaction list when we have it.

    A rolled-back transaction's id never appears again, so a deadlock transaction
    still listed under TRANSACTIONS cannot be the victim. MariaDB printed "(0)"
    (MDEV-29187) in some releases; then the one transaction gone from the list is
    the victim, else the lightest one, which is what InnoDB itself picks.
    """
    ns = {t.n: t for t in st.trxs}
    printed = st.victim
    if printed is None and st.too_deep and len(st.trxs) == 1:
        return st.trxs[0].n, "printed"
    gone = [
        t
        for t in st.trxs
        if live is not None and t.fields.get("trx_id") and t.fields["trx_id"] not in live
    ]
    if printed in ns:
        tid = ns[printed].fields.get("trx_id")
        if live is not None and tid in live and gone:
            return min(gone, key=_weight).n, "transactions-list"
        return printed, "printed"
    if printed is None:
        return None, "none"
    if len(gone) == 1:
        return gone[0].n, "transactions-list"
    pool = gone or st.trxs
    return min(pool, key=_weight).n, "weight"


def lock_from(
    lk: dict[str, Any], n: int, waiting: bool, heap_nos: tuple[int, ...] = ()
) -> DeadlockLock:
    """A DeadlockLock from a parsed lock line's fields (deadlock sections and the
    TRANSACTIONS list share the line format)."""
    return DeadlockLock(
        n=n,
        waiting=waiting,
        mode=lk["mode"],
        db=lk["db"],
        table=lk["table"],
        index=lk["index"],
        special=lk["special"],
        insert_intention=lk["insert_intention"],
        lock_type=lk["lock_type"],
        trx_id=lk["trx_id"],
        space_id=lk["space_id"],
        page_no=lk["page_no"],
        heap_nos=heap_nos,
    )
