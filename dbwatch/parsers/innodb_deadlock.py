"""One InnoDB deadlock report (status section or error-log block) -> Deadlock, line by line.

Follows the grammar the servers' printers produce, written down per version with its quirks in
docs/deadlock-grammar-innodb.md; lines outside it are named (Deadlock.unparsed). Never raises.
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
from dbwatch.parsers.innodb_report import build, lock_from
from dbwatch.parsers.innodb_wrap import (
    FRAGMENTS,
    LOCK_FIRST,
    continues_lock,
    header_tail,
    is_lock_detail,
)

__all__ = [
    "TOO_DEEP",
    "Deadlock",
    "DeadlockLock",
    "DeadlockTrx",
    "feed_line",
    "finish",
    "lock_from",
    "new_state",
    "parse_deadlock_lines",
]

MAX_TRX = 64  # a cycle longer than this is not printed by any server anyway
MAX_LOCKS = 1_000

_STAR_TRX = re.compile(r"^\*\*\* ?(?:\((\d+)\) ?)?TRANSACTION:")
# Matched on their first words: a soft wrap may put the rest ("TO BE GRANTED:") on the next line.
_STAR_WAIT = re.compile(r"^\*\*\* ?(?:\((\d+)\) ?)?WAITING FOR(?: |$)")
_STAR_HOLDS = re.compile(r"^\*\*\* ?(?:\((\d+)\) ?)?HOLDS THE(?: |$)")
_STAR_CONFLICT = re.compile(r"^\*\*\* ?(?:\((\d+)\) ?)?CONFLICTING(?: |$)")
_VICTIM = re.compile(r"^\*\*\* ?WE ROLL BACK TRANSACTION \((\d+)\)")
_ROLES = (
    (_STAR_WAIT, "WAITING FOR", "waiting"),
    (_STAR_HOLDS, "HOLDS THE", "holds"),
    (_STAR_CONFLICT, "CONFLICTING", "conflicting"),
)
_STRUCT_START = ("***", "RECORD LOCKS", "TABLE LOCK", "TRANSACTION ", "LOCK WAIT ")
TOO_DEEP = "TOO DEEP OR LONG SEARCH"  # "… IN THE LOCK TABLE WAITS-FOR GRAPH, WE WILL ROLL BACK …"


MAX_RAW_LINES = 2_000  # report lines kept, to show the sections that cannot be verified
MAX_UNPARSED = 16


@dataclass
class _Trx:
    n: int
    numbered: bool = True  # `*** (n) TRANSACTION:`; TOO DEEP prints `*** TRANSACTION:`
    fields: dict[str, Any] = field(default_factory=dict)
    query: list[str] = field(default_factory=list)
    query_len: int = 0
    in_query: bool = False
    suspect: bool = False  # a structural problem was seen inside this section
    start: int = 0  # index in _State.raw of this section's first line


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
    unparsed: list[str] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)  # the report's lines from its first section
    # How often each (n, role) marker was printed, whatever section it sits in: a second one
    # means the two readings (structure or query text) disagree on that transaction's locks.
    role_count: dict[tuple[int, str], int] = field(default_factory=dict)
    elided: int = 0  # lines the report's author replaced by "..."
    pending: str = ""  # a lock line that did not parse: perhaps wrapped onto the next line

    # How many sections' `*** (n) TRANSACTION:` markers were read before the first doubt: those
    # markers are the printer's in every reading of the report.
    doubt_at: int | None = None

    def count(self, key: tuple[int, str]) -> None:
        if key in self.role_count or len(self.role_count) < 256:  # bounded: numbers are text
            self.role_count[key] = self.role_count.get(key, 0) + 1
        else:
            self.suspect("too many report markers")

    def suspect(self, why: str, at_marker: bool = False) -> None:
        """A structural problem; `at_marker`: raised by the section marker just read."""
        if len(self.problems) < 8:
            self.problems.append(why)
        if self.trxs:
            self.trxs[-1].suspect = True
        if self.doubt_at is None:
            self.doubt_at = len(self.trxs) - (1 if at_marker else 0)

    def unknown(self, line: str) -> None:
        """A line the printers do not produce here: kept (bounded) to be shown; an author's
        elision ("...", "[…]") is counted instead."""
        if not line.strip(" .…[]()"):
            self.elided += 1
        elif len(self.unparsed) < MAX_UNPARSED:
            self.unparsed.append(line.strip()[:200])


def _on_star(st: _State, line: str) -> bool:
    """`*** …` lines; False if it is no marker (then it is text: a wrapped `***` redaction).
    Query text is data: a marker out of sequence, repeated, or after the victim line can only
    come from text inside a query, so the report is suspect."""
    # Each regex needs its literal: a substring test first skips the ones that cannot match.
    m = _STAR_TRX.match(line) if "TRANSACTION:" in line else None
    if m:
        n = int(m.group(1)) if m.group(1) else len(st.trxs) + 1
        st.count((n, "transaction"))
        if st.done:
            st.suspect("a transaction section after the victim line")
            return True
        if len(st.trxs) < MAX_TRX:
            st.trxs.append(_Trx(n, numbered=m.group(1) is not None, start=len(st.raw)))
        if n != len(st.trxs):
            st.suspect(f"transaction ({n}) out of sequence", at_marker=True)
        elif st.too_deep and len(st.trxs) > 1:  # TOO DEEP prints one `*** TRANSACTION:`
            st.suspect(f"transaction ({n}) in a TOO DEEP report", at_marker=True)
        elif not m.group(1) and not st.too_deep:
            st.suspect("an unnumbered transaction section outside a TOO DEEP report", True)
        st.role = ""
        return True
    for rx, word, role in _ROLES:
        m = rx.match(line) if word in line else None
        if m:
            if st.trxs:
                st.trxs[-1].in_query = False
            cur = st.trxs[-1].n if st.trxs else 0
            said = (int(m.group(1)) if m.group(1) else cur, role)
            st.count(said)
            if not st.trxs:
                st.suspect(f"a {role} section before any transaction")
            if st.done:
                st.suspect(f"a {role} section after the victim line")
                return True
            if m.group(1) and int(m.group(1)) != cur:
                st.suspect(f"({m.group(1)}) {role} section inside transaction ({cur})")
            if (cur, role) in st.roles_seen:
                st.suspect(f"two {role} sections for transaction ({cur})")
            st.roles_seen.add((cur, role))
            st.role = role
            return True
    m = _VICTIM.match(line) if "WE ROLL BACK" in line else None
    if m is None:
        return False
    if st.trxs:
        st.trxs[-1].in_query = False
    if not st.trxs:
        st.suspect("a victim line before any transaction")
    if st.done:
        st.suspect("two victim lines")
        return True
    st.victim = int(m.group(1))
    st.role = ""
    st.done = True
    return True


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
            f["_last"] = line
            return
    if "thread_id" not in f:
        last = f.pop("_last", None)
        if line.startswith("mysql tables in use"):
            tu = parse_tables_in_use(line)
            if tu:
                f["tables_in_use"], f["tables_locked"] = tu
            return
        counts = parse_counts(line)
        if counts is not None:
            f.update(counts)
            f["_last"] = line
            return
        if last is not None and header_tail(f, last, line):
            return
        pending = f.pop("_thread", None)
        th = parse_thread(pending + " " + line if pending else line)
        if th is not None:
            f.update(th)
            cur.in_query = True
            return
        if pending is None and line.startswith(("MySQL thread id", "MariaDB thread id")):
            f["_thread"] = line  # cut by a soft wrap: read with the next line
            return
        if pending is not None:
            st.unknown(pending)
    if line.startswith("Record lock, heap no ") and st.locks:
        heaps = st.locks[-1]["heap_nos"]
        num = line[21:].split(" ", 1)[0]
        if len(heaps) < 16 and num.isdigit():
            heaps.append(int(num))
        return
    if cur.in_query:
        if cur.query_len < MAX_QUERY:
            cur.query.append(line)
            cur.query_len += len(line) + 1
        return
    if not is_lock_detail(line):
        st.unknown(line)


def feed_line(st: _State, raw: str) -> None:
    """Consume one line of a deadlock report (already stripped of any log prefix)."""
    line = raw[:MAX_LINE].rstrip()
    if not st.trxs and TOO_DEEP in line:  # the report's first line; later, it is query text
        st.too_deep = True
    if not st.seen_first and line.strip():
        st.seen_first = True
        at, _rest = normalize_ts(line)
        if at is not None:
            st.at = st.at or at
            return
    if st.trxs and len(st.raw) < MAX_RAW_LINES:  # after the victim line too (unverified text)
        st.raw.append(line)
    head = line.lstrip()
    if head[:1] == "*" and head.startswith("***") and _on_star(st, squeeze(head)):
        return
    if not head:
        return
    if st.pending:  # a lock line cut by a soft wrap: joined with its continuation
        pending, st.pending = st.pending, ""
        lock = parse_lock_line(pending + " " + head)
        if lock is not None:
            lock["raw"] = pending + " " + head
            _on_lock(st, lock)
            return
        st.unknown(pending)
    if head[0] in "RT" and head.startswith(("RECORD LOCKS", "TABLE LOCK")):
        lock = parse_lock_line(head)
        if lock is not None:
            lock["raw"] = head
            _on_lock(st, lock)
        elif st.trxs and not st.trxs[-1].in_query and not st.done:
            st.pending = head  # joined with the next line, or named as unparsed
        return
    if (
        head[0] in LOCK_FIRST
        and st.locks
        and st.role
        and not st.trxs[-1].in_query
        and continues_lock(head)
    ):
        last = st.locks[-1]
        again = parse_lock_line(last["raw"] + " " + head)
        if again is not None:
            for k in ("mode", "special", "insert_intention", "waiting"):
                last[k] = again[k]
            last["raw"] += " " + head
            return
    if line[0] == " " and is_record_dump(line):
        return
    if not st.trxs:
        if TOO_DEEP not in line and not any(f in line for f in FRAGMENTS):
            st.unknown(line)
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
    return build(st, live_trx_ids)
