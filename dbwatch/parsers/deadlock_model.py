"""The parsed deadlock, the same for InnoDB reports and PostgreSQL logs (SPEC §6 JSON shape)."""

from __future__ import annotations

from typing import Any

from ..frozen import frozen


@frozen
class DeadlockLock:
    n: int  # number of the transaction holding or waiting for it
    waiting: bool
    mode: str | None  # X, S, IX, IS, AUTO-INC
    db: str | None
    table: str | None
    index: str | None  # None for table locks
    special: str | None  # "rec but not gap" | "gap before rec" | "gap" | None (next-key)
    insert_intention: bool
    lock_type: str = "RECORD"  # RECORD | TABLE
    trx_id: str | None = None
    space_id: int | None = None
    page_no: int | None = None
    heap_nos: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "waiting": self.waiting,
            "mode": self.mode,
            "db": self.db,
            "table": self.table,
            "index": self.index,
            "special": self.special,
            "insert_intention": self.insert_intention,
        }


@frozen
class DeadlockTrx:
    n: int
    trx_id: str | None
    thread_id: int | None
    user: str | None
    host: str | None
    query: str | None
    active_seconds: int | None
    lock_structs: int | None
    row_locks: int | None
    undo_entries: int | None
    tables: tuple[str, ...]
    victim: bool
    state: str | None = None
    query_id: int | None = None
    ip: str | None = None
    tables_in_use: int | None = None
    tables_locked: int | None = None
    blocked_by: int | None = None  # n of the transaction whose lock it waits for

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "trx_id": self.trx_id,
            "thread_id": self.thread_id,
            "user": self.user,
            "host": self.host,
            "query": self.query,
            "active_seconds": self.active_seconds,
            "lock_structs": self.lock_structs,
            "row_locks": self.row_locks,
            "undo_entries": self.undo_entries,
            "tables": list(self.tables),
            "victim": self.victim,
            "blocked_by": self.blocked_by,
        }


@frozen
class Deadlock:
    at: str | None  # "YYYY-MM-DD HH:MM:SS", server (log) time
    victim: int | None  # n of the rolled-back transaction
    transactions: tuple[DeadlockTrx, ...]
    locks: tuple[DeadlockLock, ...]
    too_deep: bool = False  # TOO DEEP OR LONG SEARCH ... (no real cycle shown)
    truncated: bool = False  # report cut before "WE ROLL BACK"
    printed_victim: int | None = None  # the number as printed (MariaDB may print 0)
    # printed | too-deep (the printer's rule: the one transaction printed is the one rolled
    # back) | transactions-list | weight | none
    victim_source: str = "printed"
    # Why the structure cannot be trusted (query text that looks like report lines):
    # then no victim is named at all.
    ambiguous: str | None = None
    # Raw text of the transaction sections an ambiguous report's readings disagree on: never
    # read as facts (docs/deadlock-grammar-innodb.md, "Ambiguity").
    unverified: tuple[str, ...] = ()
    # Lines inside the report that the printers' grammar does not produce (hand edits,
    # mangled lock lines): named, not dropped.
    unparsed: tuple[str, ...] = ()
    # Contradictions that do not make the structure ambiguous (redacted trx ids, ...).
    inconsistencies: tuple[str, ...] = ()

    @property
    def victim_inferred(self) -> bool:
        return self.victim is not None and self.victim_source not in ("printed", "too-deep")

    @property
    def victim_evidence(self) -> str:
        """How the victim was decided, in words."""
        printed = self.printed_victim
        said = (
            f"the server printed WE ROLL BACK TRANSACTION ({printed})"
            if printed is not None
            else "the server printed no victim line"
        )
        if self.ambiguous:
            return f"not named: the report's structure is ambiguous ({self.ambiguous})"
        if self.victim_source == "printed":
            return said
        if self.victim_source == "too-deep":
            return (
                f"{said}: after TOO DEEP OR LONG SEARCH the server prints only the transaction "
                f"it rolls back and a fixed (2), so transaction ({self.victim}) is the victim "
                "by the printer's rule"
            )
        if self.victim_source == "transactions-list":
            return (
                f"{said}; transaction ({self.victim}) is the one whose trx id no longer "
                "appears under TRANSACTIONS (a rolled-back transaction is gone)"
            )
        if self.victim_source == "weight":
            return (
                f"{said} (MariaDB MDEV-29187 prints 0); inferred as the lighter transaction "
                f"({self.victim}) by undo log entries + lock structs, which is how InnoDB "
                "chooses its victim"
            )
        return said

    @property
    def identity(self) -> tuple[str | None, tuple[str | None, ...]]:
        """Deduplication key across polls and sources: timestamp and trx ids."""
        return self.at, tuple(t.trx_id for t in self.transactions)

    def trx(self, n: int) -> DeadlockTrx | None:
        return next((t for t in self.transactions if t.n == n), None)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "at": self.at,
            "victim": self.victim,
            "transactions": [t.to_dict() for t in self.transactions],
            "locks": [lk.to_dict() for lk in self.locks],
        }
        if self.victim_inferred:
            out["victim_inferred"] = True
            out["victim_evidence"] = self.victim_evidence
        elif self.victim_source == "too-deep" and self.victim is not None:
            out["victim_evidence"] = self.victim_evidence
        if self.ambiguous:
            out["ambiguous"] = True
            out["ambiguity"] = self.ambiguous
        if self.truncated:
            out["truncated"] = True
        if self.unverified:
            out["unverified"] = list(self.unverified)
        if self.unparsed:
            out["unparsed"] = list(self.unparsed)
        if self.inconsistencies:
            out["inconsistencies"] = list(self.inconsistencies)
        return out
