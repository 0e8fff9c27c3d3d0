"""Name the shape of an InnoDB deadlock and its fix (pure; input is a parsed Deadlock).

Queue shapes are only claimed when both the table (jobs-like name) or the queries
(Laravel's claim) say so; anything else gets a generic, non-queue description.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dbwatch.parsers.innodb_deadlock import Deadlock, DeadlockLock, DeadlockTrx

MAX_SHOWN = 200      # query characters quoted in an explanation

_JOBS_NAME = re.compile(r"(?:^|_)jobs?$|(?:^|_)queue(?:s|_jobs?)?$|job_?queue")
_LEGACY_INDEX = re.compile(r"queue_reserved_at|queue_reserved(?:_index)?$")
_WS = re.compile(r"\s+")
_ID_EQ = r"(?:\w+\.)?id\s*=\s*(?:\?|\d+|'[^']*'|:\w+)"
_DELETE_BY_ID = re.compile(rf"^delete\s+from\s+([\w$.]+)\s+where\s+{_ID_EQ}\s*(?:limit\s+1\s*)?;?$")
_FETCH_BY_ID = re.compile(
    rf"^select\s.+?\sfrom\s+([\w$.]+)\s+where\s+{_ID_EQ}\s*(?:limit\s+1\s+)?for\s+update\s*;?$")
_CLAIM = re.compile(r"^select\s.+?\sfrom\s+([\w$.]+)\s.*\bfor\s+update\b")
_RESERVE = re.compile(r"^update\s+([\w$.]+)\s+set\s.*\breserved_at\b")

CLAIM, RESERVE, DELETE, FETCH, OTHER = "claim", "reserve", "delete", "fetch", "other"


@dataclass(frozen=True)
class Diagnosis:
    pattern: str            # queue-claim-vs-delete | queue-legacy-index | queue-claim-vs-claim |
                            # gap-insert-intention | opposite-order-rows | lock-upgrade |
                            # too-deep | generic
    rules: tuple[str, ...]
    explanation: str
    fix: str

    @property
    def is_queue_problem(self) -> bool:
        return self.pattern.startswith("queue-")

    def to_dict(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "rules": list(self.rules),
                "explanation": self.explanation, "fix": self.fix}


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
        if (m := _FETCH_BY_ID.match(q)):
            return FETCH if _base(m.group(1)) in jobs_tables else OTHER
        if (m := _CLAIM.match(q)):
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
    legacy = sorted({lk.index for lk in dl.locks
                     if lk.index and lk.table and lk.table.lower() in jobs
                     and _LEGACY_INDEX.search(lk.index.lower())})
    if jobs:
        found = _queue_shape(dl, jobs, kinds, legacy)
        if found is not None:
            return found
    return _generic_shape(dl)


def _queue_shape(dl: Deadlock, jobs: set[str], kinds: dict[int, str],
                 legacy: list[str]) -> Diagnosis | None:
    from dbwatch.diagnosis_text import claim_vs_claim, claim_vs_delete, legacy_index
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
    from dbwatch.diagnosis_text import (
        generic, gap_insert_intention, lock_upgrade, opposite_order, too_deep,
    )
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
