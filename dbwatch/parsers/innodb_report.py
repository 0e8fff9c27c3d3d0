"""The parsed lines of one InnoDB deadlock report -> Deadlock: owners, victim, blocked_by, and
what an ambiguous report may still state as fact (docs/deadlock-grammar-innodb.md). The
reader's state (_State, _Trx) lives here, below the reader (innodb_deadlock) that fills it.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from dbwatch.parsers.deadlock_model import Deadlock, DeadlockLock, DeadlockTrx
from dbwatch.parsers.innodb_common import MAX_QUERY

from ..frozen import mutable

MAX_INCONSISTENCIES = 8
MAX_UNPARSED = 16


@mutable
class _Trx:
    n: int
    numbered: bool = True  # `*** (n) TRANSACTION:`; TOO DEEP prints `*** TRANSACTION:`
    fields: dict[str, Any] = field(default_factory=dict)
    query: list[str] = field(default_factory=list)
    query_len: int = 0
    in_query: bool = False
    suspect: bool = False  # a structural problem was seen inside this section
    start: int = 0  # index in _State.raw of this section's first line


@mutable
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


def build(st: _State, live: frozenset[str] | None = None) -> Deadlock | None:
    if st.pending:
        st.unknown(st.pending)
        st.pending = ""
    if not st.trxs:
        return None
    ids = {t.fields.get("trx_id"): t.n for t in st.trxs if t.fields.get("trx_id")}
    notes = _check_owners(st, ids)
    if st.elided:
        notes.append(f"{st.elided} line(s) elided by the report's author ('...')")
    too_deep = st.too_deep and len(st.trxs) == 1 and not st.trxs[0].numbered
    if st.victim and st.victim not in {t.n for t in st.trxs} and not too_deep:
        st.suspect(f"the victim ({st.victim}) is not one of the transactions printed")
    for t in st.trxs:
        if t.n == st.victim and "trx_id" not in t.fields:
            # Every printed transaction has its `TRANSACTION <id>` line: a victim without
            # one is a `*** (n) TRANSACTION:` marker from query text, never a transaction.
            t.suspect = True
            st.suspect(f"the victim ({t.n}) has no transaction header")
    ambiguous = "; ".join(dict.fromkeys(st.problems)) or None
    if too_deep:
        victim: int | None = st.trxs[0].n
        source = "too-deep"
    else:
        victim, source = _pick_victim(st, live)
    keep = _agreed(st) if ambiguous else {t.n for t in st.trxs}
    sure = _sure(st, keep) if ambiguous else keep
    unverified: tuple[str, ...] = ()
    if ambiguous:
        victim, source = None, "none"
        ends = [t.start for t in st.trxs[1:]] + [len(st.raw)]
        unverified = tuple(
            "\n".join(st.raw[t.start : end]).strip()
            for t, end in zip(st.trxs, ends, strict=True)
            if t.n not in sure or _dup(st, t)
        )
    locks = tuple(
        lk for lk in _locks(st, ids) if not ambiguous or (lk.n in sure and _trusted_lock(lk, st))
    )
    blocked = {} if ambiguous or too_deep else _blocked_by(st, ids)
    trxs = tuple(
        _trx(t, locks, victim, blocked.get(t.n))
        for t in st.trxs
        if t.n in keep and not (ambiguous and _dup(st, t))
    )
    return Deadlock(
        at=st.at,
        victim=victim,
        transactions=trxs,
        locks=locks,
        too_deep=st.too_deep,
        truncated=st.victim is None and not st.too_deep,
        printed_victim=st.victim,
        victim_source=source,
        ambiguous=ambiguous,
        unverified=unverified,
        unparsed=tuple(st.unparsed),
        inconsistencies=tuple(notes),
    )


def _check_owners(st: _State, ids: dict[Any, int]) -> list[str]:
    """A lock under a transaction's own WAITING/HOLDS section carries that transaction's id.
    One carrying another printed transaction's id is structure out of place (query text);
    one whose id matches no header was edited by hand (redacted numbers): noted, not fatal."""
    notes: list[str] = []
    by_n = {t.n: t for t in st.trxs}
    for lk in st.locks:
        if lk["role"] not in ("waiting", "holds"):
            continue
        t = by_n.get(lk["owner_n"])
        own = t.fields.get("trx_id") if t is not None else None
        if t is None or not own or lk["trx_id"] == own:
            continue
        other = ids.get(lk["trx_id"])
        if other is not None and other != t.n:
            t.suspect = True
            at = st.trxs.index(t) + 1
            st.doubt_at = at if st.doubt_at is None else min(st.doubt_at, at)
            if len(st.problems) < 8:
                st.problems.append(
                    f"a lock of transaction ({other}) listed under transaction ({t.n})"
                )
        elif len(notes) < MAX_INCONSISTENCIES:
            notes.append(
                f"transaction ({t.n}) is printed as trx {own} but its lock line says trx "
                f"{lk['trx_id']} (numbers edited or redacted?)"
            )
    return list(dict.fromkeys(notes))


def _dup(st: _State, t: _Trx) -> bool:
    """Its `*** (n) TRANSACTION:` printed more than once, wherever (after the victim line too)."""
    return st.role_count.get((t.n, "transaction"), 0) > 1


def _agreed(st: _State) -> set[int]:
    """The transactions every reading of an ambiguous report agrees on. Query text can only
    imitate report lines after the query starts: a section whose marker was read before the
    first doubt is the printer's (its header, thread and statement come before its query ends),
    printed once, in sequence, with its header. Its locks are facts only if nothing was out of
    place inside it and no marker for it was printed twice (_sure)."""
    out: set[int] = set()
    upto = len(st.trxs) if st.doubt_at is None else st.doubt_at
    for i, t in enumerate(st.trxs[:upto]):
        if _dup(st, t) or t.n != i + 1 or "trx_id" not in t.fields:
            break
        out.add(t.n)
    return out


def _sure(st: _State, keep: set[int]) -> set[int]:
    ns = {t.n for t in st.trxs if t.n in keep and not t.suspect}
    return {n for n in ns if all(c == 1 for (k, _r), c in st.role_count.items() if k == n)}


def _trusted_lock(lk: DeadlockLock, st: _State) -> bool:
    """In an ambiguous report, a lock is a fact only if its trx id is its owner's."""
    t = next((o for o in st.trxs if o.n == lk.n), None)
    return t is not None and lk.trx_id == t.fields.get("trx_id")


def _locks(st: _State, ids: dict[Any, int]) -> list[DeadlockLock]:
    """Attribute each lock to its transaction. MariaDB's CONFLICTING WITH lists the locks in
    the queue, whoever owns them (the waiting transaction's own S lock included): ownership
    goes by trx id, 0 for a transaction not in the report. A lock printed under HOLDS THE
    LOCK(S) is listed as held even when it ends in `waiting` (MySQL 8.0.18+ prints the
    blocking lock, which can be a waiting one ahead in the queue)."""
    out: list[DeadlockLock] = []
    for lk in st.locks:
        owner = ids.get(lk["trx_id"])
        role = lk["role"]
        if owner is None:
            owner = 0 if role == "conflicting" else lk["owner_n"]
        waiting = role == "waiting" or (lk["waiting"] and role != "holds")
        out.append(lock_from(lk, owner, waiting, tuple(lk["heap_nos"])))
    return list(dict.fromkeys(out))


def _blocked_by(st: _State, ids: dict[Any, int]) -> dict[int, int]:
    """Whose lock each waiting transaction waits for. Every printer walks the cycle in order,
    so (k) waits for (k+1) and the last for (1); MariaDB's CONFLICTING WITH names the owners,
    which is preferred when one of them is another printed transaction."""
    ns = [t.n for t in st.trxs]
    waiting = {lk["owner_n"] for lk in st.locks if lk["role"] == "waiting"}
    owners: dict[int, list[int]] = {}
    for lk in st.locks:
        o = ids.get(lk["trx_id"])
        if lk["role"] == "conflicting" and o is not None and o != lk["owner_n"]:
            owners.setdefault(lk["owner_n"], []).append(o)
    out: dict[int, int] = {}
    for i, n in enumerate(ns):
        if n not in waiting or len(ns) < 2:
            continue
        nxt = ns[(i + 1) % len(ns)]
        named = owners.get(n)
        out[n] = nxt if not named or nxt in named else named[0]
    return out


def _trx(
    t: _Trx, locks: tuple[DeadlockLock, ...], victim: int | None, by: int | None
) -> DeadlockTrx:
    f = t.fields
    tables = tuple(
        dict.fromkeys(
            f"{lk.db}.{lk.table}" if lk.db else str(lk.table)
            for lk in locks
            if lk.n == t.n and lk.table
        )
    )
    return DeadlockTrx(
        n=t.n,
        trx_id=f.get("trx_id"),
        thread_id=f.get("thread_id"),
        user=f.get("user"),
        host=f.get("host"),
        query="\n".join(t.query).strip()[:MAX_QUERY] or None,
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
        blocked_by=by,
    )


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
