"""What a deadlocked transaction was doing, from the statement text the server printed.

Pure and linear (a token scan, no backtracking regex): the text is untrusted, often cut by
the server (InnoDB prints at most ~3 KB), `?`-parameterised or literal, qualified
(`laravel.jobs`) or not. Queue tables are recognised by name (the registry in
dbwatch/queues) or by the shape of a claim on them.
"""

from __future__ import annotations

from functools import lru_cache

from ..frozen import frozen

MAX_TEXT = 8192

CLAIM, RESERVE, DELETE, COMPLETE, FETCH, OTHER, UNKNOWN = (
    "claim",  # a locking read of the next job(s): not by id
    "reserve",  # the claim's update (reserved_at / locked_at / state = running)
    "delete",  # removing a job (any DELETE on the queue table)
    "complete",  # an update finishing a job by id (state / finished_at / attempts)
    "fetch",  # a locking read of one job by id (Laravel's delete does this first)
    "other",
    "unknown",  # no text, or too little to tell
)
CLAIM_SIDE = frozenset({CLAIM, RESERVE})
DONE_SIDE = frozenset({DELETE, COMPLETE, FETCH})

# Columns a claim filters or orders on: a locking "next job" read naming two of these
# marks its table as a queue even under an unknown name.
_CLAIM_COLUMNS = (
    "reserved_at",
    "available_at",
    "run_at",
    "scheduled_at",
    "locked_at",
    "locked_by",
    "queue",
    "priority",
    "attempts",
    "finished_at",
    "state",
)
_RESERVE_COLUMNS = ("reserved_at", "locked_at", "locked_by", "claimed", "reserved", "worker")
_MODIFIERS = frozenset({"low_priority", "quick", "ignore", "only"})


def normalize(query: str | None) -> str:
    """Lower case, no quotes or comments, single spaces."""
    q = (query or "")[:MAX_TEXT].lower()
    if "/*" in q:
        parts = []
        i = 0
        while (j := q.find("/*", i)) >= 0:
            parts.append(q[i:j])
            k = q.find("*/", j + 2)
            i = len(q) if k < 0 else k + 2
        parts.append(q[i:])
        q = " ".join(parts)
    q = q.replace("`", "").replace('"', "")
    return " ".join(q.replace("(", " ( ").replace(")", " ) ").replace(",", " , ").split())


def _word_after(toks: list[str], word: str, start: int = 0) -> str | None:
    try:
        i = toks.index(word, start)
    except ValueError:
        return None
    return toks[i + 1].rstrip(";") if i + 1 < len(toks) else None


def _between(q: str, a: str, ends: tuple[str, ...]) -> str:
    i = q.find(a)
    if i < 0:
        return ""
    rest = q[i + len(a) :]
    cut = min((k for k in (rest.find(e) for e in ends) if k >= 0), default=len(rest))
    return rest[:cut].strip()


def _by_id(where: str) -> bool:
    """`id = ?` / `jobs.id = 35` / `id = :id` / `id = $1`, nothing else."""
    toks = where.split()
    if len(toks) != 3 or toks[1] != "=":
        return False
    col, val = toks[0].rsplit(".", 1)[-1], toks[2]
    return col == "id" and (
        val in ("?", "%s") or val.isdigit() or val[:1] in (":", "$", "'") or val.startswith("@")
    )


@frozen
class Statement:
    kind: str
    table: str | None  # as written, schema kept ("laravel.jobs")
    locking: bool  # FOR UPDATE / FOR SHARE / LOCK IN SHARE MODE in the text
    skip_locked: bool
    claim_shape: bool  # filters/orders on queue columns with ORDER BY / LIMIT

    @property
    def base(self) -> str | None:
        return self.table.lower().rsplit(".", 1)[-1] if self.table else None


# A deadlock storm repeats the same few statements (the diagnosis classifies each participant's,
# the log tail hundreds a second): a pure function of the text, its frozen result is shared.
@lru_cache(maxsize=256)
def classify(query: str | None) -> Statement:
    q = normalize(query)
    toks = q.split()
    if not toks:
        return Statement(UNKNOWN, None, False, False, False)
    lead = 0
    while lead < len(toks) and toks[lead] == "(":
        lead += 1
    toks = toks[lead:]
    verb = toks[0] if toks else ""
    locking = "for update" in q or "for share" in q or "lock in share mode" in q
    skip = "skip locked" in q
    if verb == "delete":
        table = _word_after(toks, "from")
        return Statement(DELETE if table else UNKNOWN, table, locking, skip, False)
    if verb == "update":
        i = 1
        while i < len(toks) and toks[i] in _MODIFIERS:
            i += 1
        table = toks[i].rstrip(";") if i < len(toks) else None
        sets = _between(q, " set ", (" where ", " order by ", " limit "))
        if not table:
            return Statement(UNKNOWN, None, False, False, False)
        if any(c in sets for c in _RESERVE_COLUMNS):
            return Statement(RESERVE, table, False, False, False)
        where = _between(q, " where ", (" order by ", " limit ", " returning "))
        kind = COMPLETE if _by_id(where) or " id in " in f" {where}" else OTHER
        return Statement(kind, table, False, False, False)
    if verb in ("select", "with"):
        table = _word_after(toks, "from")
        if not table or table == "(":
            return Statement(UNKNOWN, None, locking, skip, False)
        where = _between(q, " where ", (" order by ", " limit ", " for ", " lock in "))
        named = sum(1 for c in _CLAIM_COLUMNS if c in where or f"order by {c}" in q)
        shape = named >= 2
        kind = FETCH if _by_id(where) else CLAIM
        return Statement(kind, table, locking, skip, shape and kind == CLAIM)
    if verb in ("insert", "replace"):
        return Statement(OTHER, _word_after(toks, "into"), False, False, False)
    return Statement(UNKNOWN if len(toks) < 3 else OTHER, None, locking, skip, False)


# Columns a purge/archive run selects finished or old jobs by (a range, not one job).
_MAINTENANCE_COLUMNS = (
    "finished_at",
    "completed_at",
    "created_at",
    "updated_at",
    "failed_at",
    "processed_at",
    "done_at",
    "delivered_at",
    "scheduled_at",
    "status",
    "state",
)


def delete_target(query: str | None) -> str | None:
    """How a DELETE picks its rows: "id" (one job by primary key), "key" (by another
    equality, e.g. a unique message key), "range" (a purge or archive run: a range or a
    finished/old-job condition), None if not readable: no WHERE is read as a statement the
    server cut (it prints about 3 KB), not as a purge of the whole table."""
    q = normalize(query)
    if not q.startswith("delete "):
        return None
    where = _between(q, " where ", (" order by ", " limit ", " returning "))
    if not where:
        return None
    if _by_id(where) or " id in " in f" {where}" or where.startswith("id in "):
        return "id"
    toks = where.split()
    ranged = any(t in ("<", "<=", ">", ">=", "between", "not") for t in toks) or "<" in where
    if ranged or any(c in where for c in _MAINTENANCE_COLUMNS):
        return "range"
    if len(toks) == 3 and toks[1] == "=":
        return "key"
    return "key" if " and " in where and "=" in where else None
