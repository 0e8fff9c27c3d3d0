"""A deadlock as dbwatch reports and keeps it: the parser's Deadlock (SPEC §6 object) with its
diagnosis, a dedupe key and the too-deep flag, as one frozen `DeadlockRecord`. Built where
the deadlock is used (MY102, the daemon's deadlock journal and log tail, `dbwatch deadlocks`),
never in a probe: the snapshot keeps the parsed Deadlock only. Its JSON (`to_json`) is the one
shape of MY102/PG102 evidence, the daemon's history, the dashboard and `dbwatch deadlocks`;
`from_json` reads it back from the state, including what older versions stored (a key they
did not write stays absent when written again)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from functools import lru_cache

from ..parsers.deadlock_model import Deadlock, DeadlockLock, DeadlockTrx
from ..records import DeadlockRecord, LockRecord, TrxRecord
from ..snapshot import Snapshot
from ..snapshot.memo import per_read
from ..snapshot.my import MY_INNODB_STATUS, MyThread
from ..snapshot.values import JSONObject, as_json
from ..sqlpatterns.tags import parse_tags
from .diagnosis import diagnose

__all__ = [
    "DeadlockRecord",
    "LockRecord",
    "TrxRecord",
    "check_threads",
    "deadlock_key",
    "deadlock_record",
    "latest_deadlock",
]


def deadlock_record(dl: Deadlock) -> DeadlockRecord:
    """The parsed deadlock with its diagnosis (run here, once per deadlock) and dedupe key."""
    inferred = dl.victim_inferred
    evidence = (
        dl.victim_evidence
        if inferred or (dl.victim_source == "too-deep" and dl.victim is not None)
        else None
    )
    return DeadlockRecord(
        at=dl.at,
        victim=dl.victim,
        transactions=tuple(_trx(t) for t in dl.transactions),
        locks=tuple(_lock(lk) for lk in dl.locks),
        diagnosis=diagnose(dl),
        key=deadlock_key(dl),
        too_deep=dl.too_deep,
        victim_inferred=inferred,
        victim_evidence=evidence,
        ambiguity=dl.ambiguous or None,
        truncated=dl.truncated,
        unverified=dl.unverified,
        unparsed=dl.unparsed,
        inconsistencies=dl.inconsistencies,
    )


def latest_deadlock(snapshot: Snapshot) -> DeadlockRecord | None:
    """The record of the snapshot's latest InnoDB deadlock (SHOW ENGINE INNODB STATUS),
    diagnosed once per snapshot: MY102 and the daemon's deadlock journal share it."""
    return snapshot.model("my.latest_deadlock", _latest_deadlock)


def _latest_deadlock(snapshot: Snapshot) -> DeadlockRecord | None:
    status = snapshot.get(MY_INNODB_STATUS)
    if status is None or status.deadlock is None:
        return None
    dl = status.deadlock
    # once per status read: the daemon shares it between the server's targets, and the
    # record (a function of the parsed deadlock alone) is the same for each of them
    return per_read(status, "my.latest_deadlock", lambda: deadlock_record(dl), also=(dl,))


def _trx(t: DeadlockTrx) -> TrxRecord:
    return TrxRecord(
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
        t.blocked_by,
        _origin(t.query),
    )


def _lock(lk: DeadlockLock) -> LockRecord:
    return LockRecord(
        lk.n, lk.waiting, lk.mode, lk.db, lk.table, lk.index, lk.special, lk.insert_intention
    )


@lru_cache(maxsize=256)
def _origin_cached(query: str | None) -> JSONObject:
    found = as_json(parse_tags(query).to_json())
    return found if isinstance(found, dict) else {}


def _origin(query: str | None) -> JSONObject:
    """parse_tags(query).to_json(), remembered per statement text (a storm repeats a few
    statements); a copy, so no record shares the cached object."""
    return {k: dict(v) if isinstance(v, dict) else v for k, v in _origin_cached(query).items()}


def deadlock_key(dl: Deadlock) -> str:
    """The trx ids (unique on a server; the status text and the error log may print a
    timestamp a second apart), else timestamp and process ids."""
    at, ids = dl.identity
    if ids and all(ids):
        return "trx:" + ",".join(str(i) for i in ids)
    parts = [str(i) if i is not None else f"p{t.thread_id}" for i, t in zip(ids, dl.transactions)]
    return f"{at}|{','.join(parts)}"


def check_threads(dl: Deadlock, threads: Iterable[MyThread]) -> Deadlock:
    """What the live server can still confirm (`deadlocks URL`): a thread that is connected now
    under the thread id the report prints is the same session (ids are not reused while the
    server runs), so its user must match; a transaction still open under a printed trx id runs
    in the printed thread. A contradiction is noted, not fatal (the report may be older)."""
    by_thread = {t.thread_id: t for t in threads}
    by_trx = {t.trx_id: t for t in by_thread.values() if t.trx_id}
    notes: list[str] = []
    for t in dl.transactions:
        now = by_thread.get(t.thread_id) if t.thread_id is not None else None
        if now is not None and t.user and now.user and now.user != t.user:
            notes.append(
                f"({t.n}) thread {t.thread_id} is printed as user {t.user}, but that thread is "
                f"connected now as {now.user}"
            )
        open_trx = by_trx.get(t.trx_id) if t.trx_id else None
        if open_trx is not None and t.thread_id is not None and open_trx.thread_id != t.thread_id:
            notes.append(
                f"({t.n}) trx {t.trx_id} is printed in thread {t.thread_id}, but it runs now in "
                f"thread {open_trx.thread_id}"
            )
    if not notes:
        return dl
    return replace(dl, inconsistencies=(*dl.inconsistencies, *notes[:8]))
