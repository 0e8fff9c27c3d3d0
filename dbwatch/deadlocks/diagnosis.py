"""Name the shape of an InnoDB deadlock and its fix (pure; input is a parsed Deadlock).

Decided by what the transactions do (dbwatch.parsers.statements): a delete or completing
update on a queue table against a claim on the same table is claim-vs-delete, whichever
index and whichever victim. Anything not on a queue table gets a generic, non-queue shape.
"""

from __future__ import annotations

from dbwatch.parsers.innodb_deadlock import Deadlock, DeadlockLock
from dbwatch.parsers.statements import (
    CLAIM_SIDE,
    COMPLETE,
    DELETE,
    DONE_SIDE,
    FETCH,
    OTHER,
    UNKNOWN,
    Statement,
    classify,
)
from dbwatch.queues.laravel import LEGACY_SHAPES, legacy_index_fix, legacy_shape_of_name
from dbwatch.records import Diagnosis

from .queue_shapes import (
    SKIP_LOCKED as _SKIP_LOCKED,
)
from .queue_shapes import (
    delete_targets,
    delete_vs_delete,
    is_queue_table_name,
    maintenance_vs_workers,
    queue_indexes,
)
from .queue_shapes import (
    inferred as _inferred,
)
from .queue_shapes import (
    short as _short,
)
from .queue_shapes import (
    victim_of as _victim,
)
from .queue_shapes import (
    who as _who,
)

__all__ = ["Diagnosis", "diagnose", "query_kind"]

_LEGACY_INDEX = ("queue_reserved_at", "queue_reserved_index", "queue_reserved")

# A legacy index as an InnoDB report names it: (schema or "" when not printed, table, index).
Legacy = tuple[str, str, str]


def _base(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def query_kind(query: str | None, jobs_tables: set[str]) -> str:
    """The queue operation a statement performs on one of `jobs_tables`, else other."""
    st = classify(query)
    if st.kind == UNKNOWN:
        return OTHER
    if st.base is None or st.base not in jobs_tables:
        return OTHER
    return st.kind


def _queue_tables(dl: Deadlock, stmts: dict[int, Statement]) -> set[str]:
    """Queue tables by name (locks and statements), or by the shape of a claim on them."""
    names = {lk.table.lower() for lk in dl.locks if lk.table}
    names |= {s.base for s in stmts.values() if s.base}
    out = {n for n in names if is_queue_table_name(n)}
    out |= {s.base for s in stmts.values() if s.base and s.claim_shape}
    return out


def _kinds(dl: Deadlock, stmts: dict[int, Statement], queue: set[str]) -> dict[int, str]:
    """Each transaction's queue operation; a cut or missing text on a queue table's lock
    is `unknown`, a statement on another table `other`."""
    out: dict[int, str] = {}
    for t in dl.transactions:
        st = stmts[t.n]
        on_queue = any(lk.n == t.n and lk.table and lk.table.lower() in queue for lk in dl.locks)
        if st.base is not None:
            out[t.n] = st.kind if st.base in queue else OTHER
        elif st.kind == UNKNOWN and on_queue:
            out[t.n] = UNKNOWN
        else:
            out[t.n] = OTHER
    return out


def diagnose(dl: Deadlock) -> Diagnosis:
    """The known shape this deadlock matches, with the rule and the fix."""
    if dl.ambiguous:
        return ambiguous(dl)
    stmts = {t.n: classify(t.query) for t in dl.transactions}
    queue = _queue_tables(dl, stmts)
    if queue:
        kinds = _kinds(dl, stmts, queue)
        legacy = sorted(
            {
                (lk.db or "", lk.table, lk.index)
                for lk in dl.locks
                if lk.index
                and lk.table
                and lk.table.lower() in queue
                and any(k in lk.index.lower() for k in _LEGACY_INDEX)
            }
        )
        found = _queue_shape(dl, queue, kinds, legacy)
        if found is not None:
            return found
    return _generic_shape(dl)


def _queue_shape(
    dl: Deadlock, queue: set[str], kinds: dict[int, str], legacy: list[Legacy]
) -> Diagnosis | None:
    table = _table_of(dl, queue)
    targets = delete_targets(dl, kinds)
    purge = [n for n, how in targets.items() if how == "range"]
    workers = [n for n, k in kinds.items() if k in CLAIM_SIDE | DONE_SIDE and n not in purge]
    if purge and workers:
        return maintenance_vs_workers(dl, table, purge, workers, kinds)
    claims = [n for n, k in kinds.items() if k in CLAIM_SIDE]
    dones = [n for n, k in kinds.items() if k in DONE_SIDE]
    dels = [n for n, how in targets.items() if how in ("id", "key")]
    indexes = queue_indexes(dl, queue)
    if not claims and len(dels) >= 2 and (len(set(targets.values())) > 1 or len(indexes) > 1):
        return delete_vs_delete(dl, table, dels, targets, indexes)
    if claims and dones:
        return claim_vs_delete(dl, kinds, table, legacy)
    if legacy and (claims or dones):
        return legacy_index(dl, table, legacy)
    if len(claims) >= 2:
        return claim_vs_claim(dl, table)
    if claims and dl.too_deep:
        return claim_pileup(dl, table)
    if any(k == UNKNOWN for k in kinds.values()):
        return queue_unclear(dl, table, kinds)
    return None


def _table_of(dl: Deadlock, jobs: set[str]) -> str:
    for lk in dl.locks:
        if lk.table and lk.table.lower() in jobs:
            return f"{lk.db}.{lk.table}" if lk.db else lk.table
    for t in dl.transactions:
        st = classify(t.query)
        if st.base in jobs and st.table:
            return st.table
    return next(iter(sorted(jobs)), "jobs")


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


def _is_pg(dl: Deadlock) -> bool:
    return any(lk.lock_type in ("TRANSACTION", "TUPLE", "RELATION", "OTHER") for lk in dl.locks)


_DONE_WORDS = {
    DELETE: ("deleting", "the delete"),
    COMPLETE: ("completing", "the completing update"),
    FETCH: ("deleting", "the delete (its `SELECT … WHERE id = ? FOR UPDATE`)"),
}


def claim_vs_delete(
    dl: Deadlock, kinds: dict[int, str], table: str, legacy: list[Legacy]
) -> Diagnosis:
    victim = _victim(dl)
    pg = _is_pg(dl)
    deleter = next((t for t in dl.transactions if kinds[t.n] in DONE_SIDE), None)
    claimer = next((t for t in dl.transactions if kinds[t.n] in CLAIM_SIDE), None)
    doing, the_done = _DONE_WORDS.get(kinds[deleter.n] if deleter else DELETE, _DONE_WORDS[DELETE])
    done_kind = kinds[deleter.n] if deleter else DELETE
    laravel = FETCH in kinds.values() or (_base(table).lower() == "jobs" and done_kind == DELETE)
    how = (
        " (Laravel first locks it with `SELECT … WHERE id = ? FOR UPDATE`, then deletes it)"
        if laravel
        else ""
    )
    order = (
        "they lock the same rows in opposite order"
        if pg
        else "the two lock the primary key and the queue's index in opposite order"
    )
    engine = "PostgreSQL aborted" if pg else "InnoDB rolled back"
    expiry = "retry_after expires" if laravel else "its reservation expires"
    text = (
        f"Queue claim-vs-delete deadlock on `{table}`: {_who(deleter)} was {doing} a "
        f"finished job{how} while {_who(claimer)} was claiming the next job with a locking "
        f"`SELECT … FOR UPDATE` without SKIP LOCKED; {order}. "
    )
    if dl.victim is None:
        text += "The report does not say which side was rolled back."
    elif victim is not None and kinds.get(victim.n) in DONE_SIDE:
        text += (
            f"{_inferred(dl)}{engine} {the_done}, so the job was not finished: it stays "
            f"claimed and will run again once {expiry} (QU002, QU003)."
        )
    else:
        text += (
            f"{_inferred(dl)}{engine} the claim this time (the worker just polls again); "
            f"when {the_done} is the victim, the job stays claimed and runs twice."
        )
    if done_kind == COMPLETE:  # not Laravel's fetch-then-delete: the claim is the fix
        rules: tuple[str, ...] = ("QU402",)
        fix = (
            f"{_SKIP_LOCKED.capitalize()}; make the completing update and the claim lock rows in "
            "one order (ORDER BY id), and retry on a deadlock (error 1213 / SQLSTATE 40P01)."
        )
    else:
        rules = ("QU401",)
        fix = (
            "Delete the job in one statement, without the preceding `SELECT … FOR UPDATE` "
            "(QU401), and retry the delete on a deadlock (error 1213 / SQLSTATE 40P01, e.g. "
            f"DB::transaction(fn, 3) around deleteReserved); {_SKIP_LOCKED}."
        )
    if legacy:
        rules = (*rules, "QU301")
        fix += " " + _legacy_fix(legacy)
    return Diagnosis("queue-claim-vs-delete", rules, text, fix)


def claim_pileup(dl: Deadlock, table: str) -> Diagnosis:
    text = (
        f"Queue workers piled up on `{table}`: InnoDB gave up searching the wait-for graph "
        f"(TOO DEEP OR LONG SEARCH) while claims with plain `FOR UPDATE` waited on each "
        f"other, and rolled back {_who(_victim(dl))}. Every claim queues behind the oldest "
        f"lock holder on the same rows."
    )
    return Diagnosis("queue-claim-pileup", ("QU402",), text, _SKIP_LOCKED.capitalize() + ".")


def queue_unclear(dl: Deadlock, table: str, kinds: dict[int, str]) -> Diagnosis:
    said = "; ".join(
        f"({t.n}) "
        + (f"`{_short(t.query)}`" if t.query else "no statement printed")
        + f" [{kinds.get(t.n, OTHER)}]"
        for t in dl.transactions
    )
    text = (
        f"Deadlock on the queue table `{table}`, but the statement text the server printed is "
        f"not enough to tell which queue operations collided: {said}. The printed text is "
        f"the statement running at the time, cut at about 3 KB; earlier statements of the "
        f"same transactions also hold locks. Rolled back: {_who(_victim(dl))}."
    )
    fix = (
        "Read the application's queue code paths for this table (claim, reserve, delete or "
        f"complete); turn on the general or slow log briefly to see whole transactions "
        f"(`dbwatch audit --log`). {_SKIP_LOCKED.capitalize()}."
    )
    return Diagnosis("queue-unclear", (), text, fix)


def ambiguous(dl: Deadlock) -> Diagnosis:
    text = (
        f"The deadlock report's structure is ambiguous ({dl.ambiguous}): text inside a "
        f"query can imitate report lines, so dbwatch names no victim and no cause for it. "
        f"Transactions as read: {len(dl.transactions)}; tables: {_tables(dl)}."
    )
    fix = (
        "Read this report in the server's own output (SHOW ENGINE INNODB STATUS right after "
        "the deadlock, or the error log) and check which statement texts contain report-"
        "like lines; such queries may be an attempt to forge deadlock reports."
    )
    return Diagnosis("ambiguous", (), text, fix)


def _legacy_fix(legacy: list[Legacy]) -> str:
    """QU301's SQL (queues/laravel.py) for each table, schema-qualified when the report names
    the schema. A report does not list a table's other indexes, so the new `(queue)` index is
    always added, with the words to leave it out; only InnoDB reports name indexes."""
    tables: dict[tuple[str, str], list[str]] = {}
    for schema, table, index in legacy:
        tables.setdefault((schema, table), []).append(index)
    sql = " ".join(
        legacy_index_fix("mysql", schema or None, table, indexes, has_queue_index=False)
        for (schema, table), indexes in tables.items()
    )
    news = " / ".join(f"`{table}_queue_index`" for _, table in tables)
    return (
        f"{sql} If the table already has a `(queue)` index, leave out the ADD INDEX (a "
        "deadlock report does not list the other indexes; `dbwatch audit`'s QU301 reads them "
        "and prints the statement that fits): under another name it would be a duplicate; "
        f"named {news}, the ALTER fails whole and drops nothing."
    )


def _legacy_names(legacy: list[Legacy]) -> str:
    """Each legacy index with what its name says: Laravel's name for a shape of a release
    (LEGACY_SHAPES), or only like one; the report never lists an index's columns."""
    out = []
    for index in sorted({ix for _, _, ix in legacy}):
        shape = legacy_shape_of_name(index)
        about = (
            f"the name {LEGACY_SHAPES[shape]} gives its ({', '.join(shape)}) index"
            if shape
            else "named like Laravel's legacy (queue, reserved…) indexes; the report lists "
            "no columns"
        )
        out.append(f"{index} ({about})")
    return ", ".join(out)


def legacy_index(dl: Deadlock, table: str, legacy: list[Legacy]) -> Diagnosis:
    victim = _victim(dl)
    many = len({ix for _, _, ix in legacy}) > 1
    text = (
        f"Deadlock on the legacy {'indexes' if many else 'index'} {_legacy_names(legacy)} "
        f"of `{table}`: reserving a job updates reserved_at, which moves the row inside "
        f"{'those indexes' if many else 'that index'} while other workers' claim scans hold "
        f"locks on it, so claims deadlock with each other. Rolled back: {_who(victim)}."
    )
    fix = _legacy_fix(legacy) + f" Then {_SKIP_LOCKED}."
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
        "DUPLICATE KEY UPDATE instead of check-then-insert; retry on a deadlock (MySQL error 1213, PostgreSQL SQLSTATE 40P01)."
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
        "short, and retry on a deadlock (MySQL error 1213, PostgreSQL SQLSTATE 40P01)."
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
        "or use INSERT … ON DUPLICATE KEY UPDATE; retry on a deadlock (MySQL error 1213, PostgreSQL SQLSTATE 40P01)."
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


def _object(lk: DeadlockLock) -> str:
    """What a lock is on, as far as the report names it (a PostgreSQL log without %d in its
    prefix names no database; a transaction-id lock names no table)."""
    if lk.table:
        return f"{lk.db}.{lk.table}" if lk.db else lk.table
    return lk.special or "an object the report does not name"


def generic(dl: Deadlock) -> Diagnosis:
    waits = (
        "; ".join(
            f"({lk.n}) waits for {lk.mode or '?'} on {_object(lk)}"
            + (f" index {lk.index}" if lk.index else "")
            + (f" ({lk.special})" if lk.special and lk.table else "")
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
        "them short; retry on a deadlock (MySQL error 1213, PostgreSQL SQLSTATE 40P01)."
    )
    return Diagnosis("generic", (), text, fix)
