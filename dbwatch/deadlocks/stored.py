"""What the deadlock journal stores of a record the log tail read, and how a reader gets the
record's JSON back.

The journal's row (`deadlocks.data`) holds the record's JSON (`DeadlockRecord.to_json`, keys
sorted). The log tail writes a storm's rows (those built from a learnt shape's template; a
one-off is stored in full: live._logged_once) in a *compact* form when it can: the diagnosis' explanation and fix
(about 1.1 KB of a 2.4–3 KB row) are left out and marked `"derived": true`, because they are a
function of the stored facts — the record read back (`DeadlockRecord.from_json`), its
transactions and locks given back to `diagnose`, gives them again. That is checked for every
row before it is written compact (the compact text read back must give the full text exactly);
where it does not (a diagnosis that reads what the record does not keep: a lock's page and heap
numbers, PostgreSQL's lock types), the row is written in full, as before. Why: a row under
~2 KB shares a 4 KB SQLite page (two or three a page instead of one), which halves or thirds
the pages a deadlock storm writes to the WAL and the checkpoint copies.

Readers decode a row's data through `expand` (JournalStore.deadlocks, StateReader.deadlocks):
a compact row comes back as the full JSON the row would have held (same keys, same order, same
text), a full row (every row written before, every row of the daemon's live reads) unchanged.
The pattern, the rules, the locks and everything else stay in the row: SQL on them
(`json_extract(data, '$.diagnosis.pattern')`, the dashboard's filters) reads both forms alike;
only SQL reading `$.diagnosis.explanation` or `$.diagnosis.fix` directly finds them absent in a
compact row.
"""

from __future__ import annotations

import json

from ..parsers.deadlock_model import Deadlock, DeadlockLock, DeadlockTrx
from ..records import DERIVED, DeadlockRecord, is_compact
from ..snapshot.values import JSONObject
from .diagnosis import diagnose

__all__ = ["expand", "full_text", "stored_text"]

SEP = (",", ":")  # the compact row's separators (no spaces)


def full_text(rec: DeadlockRecord) -> str:
    """The full form: what the journal stored of every record before (and still does of the
    daemon's live reads: JournalStore.record_deadlock's json.dumps)."""
    return json.dumps(rec.to_json(), default=str, sort_keys=True)


def stored_text(rec: DeadlockRecord) -> str:
    """The text the log tail stores of a record: compact when reading it back (`expand`)
    gives the full text exactly, else the full text."""
    d = rec.to_json()
    full = json.dumps(d, default=str, sort_keys=True)
    diag = d.get("diagnosis")
    if not isinstance(diag, dict) or "explanation" not in diag or "fix" not in diag:
        return full
    short = {k: v for k, v in diag.items() if k not in ("explanation", "fix")}
    short[DERIVED] = True
    compact = json.dumps({**d, "diagnosis": short}, default=str, sort_keys=True, separators=SEP)
    # expand(json.loads(compact)) is the compact row's JSON (the full row's but for the
    # diagnosis) with the diagnosis derived again: the text is the full one exactly when that
    # diagnosis is the record's (a dict of texts and a list of texts: == is exact)
    try:
        again = expand(json.loads(compact))["diagnosis"]
    except Exception:  # noqa: BLE001 - a record the reader could not expand: stored in full
        return full
    return compact if again == diag and list(again) == sorted(diag) else full


def expand(data: JSONObject) -> JSONObject:
    """A decoded row's data as the full record JSON: a compact row's diagnosis given its
    explanation and fix again (derived from the stored facts); any other row as it is."""
    if not is_compact(data):
        return data
    diag = diagnose(_deadlock(DeadlockRecord.from_json(data)))
    out = dict(data)  # the keys in their order (sorted, as stored)
    out["diagnosis"] = dict(sorted(diag.to_dict().items()))
    return out


def _deadlock(rec: DeadlockRecord) -> Deadlock:
    """The parsed deadlock as far as the record keeps it: what `diagnose` reads of it
    (stored_text checks that the diagnosis comes out the same before it leaves it out)."""
    return Deadlock(
        at=rec.at,
        victim=rec.victim,
        transactions=tuple(
            DeadlockTrx(
                t.n,
                t.trx_id,
                t.thread_id,
                t.user,
                t.host,
                t.query,
                t.active_seconds,
                t.lock_structs,
                t.row_locks,
                t.undo_entries,
                t.tables,
                t.victim,
                blocked_by=t.blocked_by,
            )
            for t in rec.transactions
        ),
        locks=tuple(
            DeadlockLock(
                lk.n,
                lk.waiting,
                lk.mode,
                lk.db,
                lk.table,
                lk.index,
                lk.special,
                lk.insert_intention,
            )
            for lk in rec.locks
        ),
        too_deep=rec.too_deep,
        truncated=rec.truncated,
        # the diagnosis asks only whether the victim was inferred (not printed)
        victim_source="inferred"
        if rec.victim_inferred
        else ("too-deep" if rec.too_deep else "printed"),
        ambiguous=rec.ambiguity,
        unverified=rec.unverified,
        unparsed=rec.unparsed,
        inconsistencies=rec.inconsistencies,
    )
