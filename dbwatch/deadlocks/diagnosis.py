"""Name the shape of an InnoDB deadlock and its fix (pure; input is a parsed Deadlock).

Queue shapes are only claimed when both the table (jobs-like name) or the queries
(Laravel's claim) say so; anything else gets a generic, non-queue description.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dbwatch.parsers.innodb_deadlock import Deadlock, DeadlockLock, DeadlockTrx

MAX_SHOWN = 200  # query characters quoted in an explanation

_JOBS_NAME = re.compile(r"(?:^|_)jobs?$|(?:^|_)queue(?:s|_jobs?)?$|job_?queue")
_LEGACY_INDEX = re.compile(r"queue_reserved_at|queue_reserved(?:_index)?$")
_WS = re.compile(r"\s+")
_ID_EQ = r"(?:\w+\.)?id\s*=\s*(?:\?|\d+|'[^']*'|:\w+)"
_DELETE_BY_ID = re.compile(rf"^delete\s+from\s+([\w$.]+)\s+where\s+{_ID_EQ}\s*(?:limit\s+1\s*)?;?$")
_FETCH_BY_ID = re.compile(
    rf"^select\s.+?\sfrom\s+([\w$.]+)\s+where\s+{_ID_EQ}\s*(?:limit\s+1\s+)?for\s+update\s*;?$"
)
_CLAIM = re.compile(r"^select\s.+?\sfrom\s+([\w$.]+)\s.*\bfor\s+update\b")
_RESERVE = re.compile(r"^update\s+([\w$.]+)\s+set\s.*\breserved_at\b")

CLAIM, RESERVE, DELETE, FETCH, OTHER = "claim", "reserve", "delete", "fetch", "other"


@dataclass(frozen=True)
class Diagnosis:
    pattern: str  # queue-claim-vs-delete | queue-legacy-index | queue-claim-vs-claim |
    # gap-insert-intention | opposite-order-rows | lock-upgrade |
    # too-deep | generic
    rules: tuple[str, ...]
    explanation: str
    fix: str

    @property
    def is_queue_problem(self) -> bool:
        return self.pattern.startswith("queue-")

    def to_dict(self) -> dict[str, Any]:
        return {
            "pattern": self.pattern,
            "rules": list(self.rules),
            "explanation": self.explanation,
            "fix": self.fix,
        }


def _norm(query: str | None) -> str:
    q = (query or "")[:8192].lower().replace("`", "").replace('"', "")
    return _WS.sub(" ", q).strip()


def _base(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def query_kind(query: str | None, jobs_tables: set[str]) -> str:
    """claim / reserve / delete / fetch / other, for the statement a transaction was running."""
    q = _norm(query)
    if q.startswith("delete") and (m := _DELETE_BY_ID.match(q)):
        return DELETE if _base(m.group(1)) in jobs_tables else OTHER
    if q.startswith("update") and (m := _RESERVE.match(q)):
        return RESERVE
    if q.startswith("select"):
        if m := _FETCH_BY_ID.match(q):
            return FETCH if _base(m.group(1)) in jobs_tables else OTHER
        if m := _CLAIM.match(q):
            laravel = "reserved_at" in q and "available_at" in q
            shaped = _base(m.group(1)) in jobs_tables and "order by" in q and "limit" in q
            if laravel or shaped:
                return CLAIM
    return OTHER


def _jobs_tables(dl: Deadlock) -> set[str]:
    names = {lk.table.lower() for lk in dl.locks if lk.table}
    by_name = {n for n in names if _JOBS_NAME.search(n)}
    # Laravel's claim names its table: a renamed jobs table still counts.
    for t in dl.transactions:
        q = _norm(t.query)
        if "reserved_at" in q and "available_at" in q and (m := _CLAIM.match(q)):
            by_name.add(_base(m.group(1)))
    return by_name


def _short(query: str | None) -> str:
    q = _WS.sub(" ", query or "?").strip()
    return q if len(q) <= MAX_SHOWN else q[:MAX_SHOWN] + "…"


def _who(t: DeadlockTrx | None) -> str:
    if t is None:
        return "an unknown transaction"
    return f"transaction ({t.n}) (thread {t.thread_id}, `{_short(t.query)}`)"


def _table_of(dl: Deadlock, jobs: set[str]) -> str:
    for lk in dl.locks:
        if lk.table and lk.table.lower() in jobs:
            return f"{lk.db}.{lk.table}" if lk.db else lk.table
    return next(iter(sorted(jobs)), "jobs")


def diagnose(dl: Deadlock) -> Diagnosis:
    """The known shape this deadlock matches, with the rule and the fix."""
    jobs = _jobs_tables(dl)
    kinds = {t.n: query_kind(t.query, jobs) for t in dl.transactions}
    legacy = sorted(
        {
            lk.index
            for lk in dl.locks
            if lk.index
            and lk.table
            and lk.table.lower() in jobs
            and _LEGACY_INDEX.search(lk.index.lower())
        }
    )
    if jobs:
        found = _queue_shape(dl, jobs, kinds, legacy)
        if found is not None:
            return found
    return _generic_shape(dl)


def _queue_shape(
    dl: Deadlock, jobs: set[str], kinds: dict[int, str], legacy: list[str]
) -> Diagnosis | None:
    vals = set(kinds.values())
    claims = vals & {CLAIM, RESERVE}
    deletes = vals & {DELETE, FETCH}
    table = _table_of(dl, jobs)
    if claims and deletes:
        return claim_vs_delete(dl, kinds, table, legacy)
    if legacy and (claims or deletes):
        return legacy_index(dl, table, legacy)
    if claims and len([k for k in kinds.values() if k in (CLAIM, RESERVE)]) >= 2:
        return claim_vs_claim(dl, table)
    return None


def _waiting(dl: Deadlock) -> list[DeadlockLock]:
    return [lk for lk in dl.locks if lk.waiting]


def _generic_shape(dl: Deadlock) -> Diagnosis:
    if dl.too_deep:
        return too_deep(dl)
    waits = _waiting(dl)
    if any(lk.insert_intention or lk.special in ("gap", "gap before rec") for lk in waits):
        return gap_insert_intention(dl)
    rec_waits = [lk for lk in waits if lk.lock_type == "RECORD"]
    if len(dl.transactions) >= 2 and len({lk.n for lk in rec_waits}) >= 2:
        spots = {(lk.space_id, lk.page_no, lk.heap_nos[:1], lk.index) for lk in rec_waits}
        held_s = any(not lk.waiting and lk.mode == "S" for lk in dl.locks)
        if len(spots) == 1 and held_s:
            return lock_upgrade(dl)
        if len(spots) == len(rec_waits):
            return opposite_order(dl)
    return generic(dl)


# --- the words: one function per shape --------------------------------------------

_SKIP_LOCKED = (
    "claim with `FOR UPDATE SKIP LOCKED` where the server has it "
    "(MySQL 8.0.1+, MariaDB 10.6+; Laravel uses it from 6.14 / 8.69)"
)


def _victim(dl: Deadlock) -> DeadlockTrx | None:
    return dl.trx(dl.victim) if dl.victim is not None else None


def claim_vs_delete(
    dl: Deadlock, kinds: dict[int, str], table: str, legacy: list[str]
) -> Diagnosis:
    victim = _victim(dl)
    deleter = next((t for t in dl.transactions if kinds[t.n] in (DELETE, FETCH)), None)
    claimer = next((t for t in dl.transactions if kinds[t.n] in (CLAIM, RESERVE)), None)
    text = (
        f"Queue claim-vs-delete deadlock on `{table}`: {_who(deleter)} was deleting a "
        f"finished job (Laravel fetches it with `SELECT … WHERE id = ? FOR UPDATE` and "
        f"then deletes it) while {_who(claimer)} was claiming the next job with "
        f"`SELECT … ORDER BY id LIMIT 1 FOR UPDATE`; they lock the primary key and the "
        f"queue index in opposite order. "
    )
    if victim is not None and kinds.get(victim.n) in (DELETE, FETCH):
        text += (
            "InnoDB rolled back the delete, so the job was not removed: it stays "
            "reserved and will run again once retry_after expires (QU002, QU003)."
        )
    elif victim is not None:
        text += (
            "InnoDB rolled back the claim this time (the worker just polls again); "
            "when the delete is the victim, the job stays reserved and runs twice."
        )
    else:
        text += "The report does not say which side was rolled back."
    rules = ("QU401", "QU301") if legacy else ("QU401",)
    fix = (
        "Delete the job in one statement, without the preceding `SELECT … FOR UPDATE` "
        "(QU401), and retry the delete on error 1213 (e.g. DB::transaction(fn, 3) around "
        f"deleteReserved); {_SKIP_LOCKED}."
    )
    if legacy:
        fix += " " + _legacy_fix(table, legacy)
    return Diagnosis("queue-claim-vs-delete", rules, text, fix)


def _legacy_fix(table: str, legacy: list[str]) -> str:
    base = _base(table)
    drops = " ".join(f"DROP INDEX `{ix}` ON `{base}`;" for ix in legacy)
    return f"{drops} CREATE INDEX `{base}_queue_index` ON `{base}` (`queue`);"


def legacy_index(dl: Deadlock, table: str, legacy: list[str]) -> Diagnosis:
    victim = _victim(dl)
    text = (
        f"Deadlock on the legacy (queue, reserved_at) index {', '.join(legacy)} of "
        f"`{table}` (Laravel 5.3/5.4 schema): reserving a job updates reserved_at, which "
        f"moves the row inside that index while other workers' claim scans hold locks on "
        f"it, so claims deadlock with each other. Rolled back: {_who(victim)}."
    )
    fix = _legacy_fix(table, legacy) + f" Then {_SKIP_LOCKED}."
    return Diagnosis("queue-legacy-index", ("QU301",), text, fix)


def claim_vs_claim(dl: Deadlock, table: str) -> Diagnosis:
    text = (
        f"Two queue workers claiming jobs from `{table}` with plain `FOR UPDATE` "
        f"deadlocked on the rows they scan. Rolled back: {_who(_victim(dl))}; that "
        f"worker polls again, but every claim waits for the others."
    )
    return Diagnosis("queue-claim-vs-claim", ("QU402",), text, _SKIP_LOCKED.capitalize() + ".")


def _tables(dl: Deadlock) -> str:
    names = sorted(
        {f"{lk.db}.{lk.table}" if lk.db else str(lk.table) for lk in dl.locks if lk.table}
    )
    return ", ".join(f"`{n}`" for n in names) or "unknown tables"


def gap_insert_intention(dl: Deadlock) -> Diagnosis:
    text = (
        f"Gap / insert-intention deadlock on {_tables(dl)}: one transaction holds a gap "
        f"or next-key lock (from a locking read or a delete/update of a range or a "
        f"missing row) and another waits to insert into that gap. Rolled back: "
        f"{_who(_victim(dl))}."
    )
    fix = (
        "Lock exact rows by a unique key instead of ranges or missing rows, use READ "
        "COMMITTED (no gap locks for plain reads and searches), or use INSERT … ON "
        "DUPLICATE KEY UPDATE instead of check-then-insert; retry on error 1213."
    )
    return Diagnosis("gap-insert-intention", (), text, fix)


def opposite_order(dl: Deadlock) -> Diagnosis:
    text = (
        f"Two transactions locked the same rows of {_tables(dl)} in opposite order: "
        f"each holds a row the other is waiting for. Rolled back: {_who(_victim(dl))}."
    )
    fix = (
        "Touch rows in one consistent order (e.g. sort by primary key before updating, "
        "or lock them all with one `SELECT … ORDER BY id FOR UPDATE`), keep transactions "
        "short, and retry on error 1213."
    )
    return Diagnosis("opposite-order-rows", (), text, fix)


def lock_upgrade(dl: Deadlock) -> Diagnosis:
    text = (
        f"Shared-to-exclusive upgrade deadlock on {_tables(dl)}: transactions hold a "
        f"shared (S) lock on the same record (a `FOR SHARE` read, a foreign-key check or "
        f"a duplicate-key check) and then each needs an exclusive lock on it. Rolled back: "
        f"{_who(_victim(dl))}."
    )
    fix = (
        "Take the exclusive lock first (`SELECT … FOR UPDATE` instead of a shared read), "
        "or use INSERT … ON DUPLICATE KEY UPDATE; retry on error 1213."
    )
    return Diagnosis("lock-upgrade", (), text, fix)


def too_deep(dl: Deadlock) -> Diagnosis:
    text = (
        "InnoDB gave up searching the lock wait-for graph (TOO DEEP OR LONG SEARCH: more "
        "than 200 transactions deep or 1,000,000 locks) and rolled back "
        f"{_who(_victim(dl))}; this means a pile-up of lock waits, not a proven cycle."
    )
    fix = (
        "Find the transaction everyone waits for (MY101 lock-wait chains) and shorten it; "
        "reduce the number of concurrent writers to the hot rows."
    )
    return Diagnosis("too-deep", (), text, fix)


def generic(dl: Deadlock) -> Diagnosis:
    waits = (
        "; ".join(
            f"({lk.n}) waits for {lk.mode or '?'} on {lk.db}.{lk.table}"
            + (f" index {lk.index}" if lk.index else "")
            + (f" ({lk.special})" if lk.special else "")
            for lk in _waiting(dl)
        )
        or "no waiting lock printed"
    )
    text = (
        f"Deadlock between {len(dl.transactions)} transactions on {_tables(dl)}: {waits}. "
        f"Rolled back: {_who(_victim(dl))}."
    )
    fix = (
        "Make transactions that touch these tables lock rows in the same order and keep "
        "them short; retry on error 1213."
    )
    return Diagnosis("generic", (), text, fix)
