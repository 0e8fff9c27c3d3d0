"""A deadlock as dbwatch reports and keeps it: the parser's Deadlock (SPEC §6 object) with its
diagnosis, a dedupe key and the too-deep flag. Built where the deadlock is used (MY102, the
daemon's deadlock journal and log tail, `dbwatch deadlocks`), never in a probe: the snapshot
keeps the parsed Deadlock only."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from functools import lru_cache

from ..parsers.deadlock_model import Deadlock
from ..snapshot.my import MyThread
from ..sqlpatterns.tags import parse_tags
from .diagnosis import diagnose

# The record's JSON object: one shape for MY102/PG102 evidence, the daemon's history, the
# dashboard and `dbwatch deadlocks`.
DeadlockRecord = dict[str, object]


def deadlock_record(dl: Deadlock) -> DeadlockRecord:
    """The SPEC §6 deadlock object with its diagnosis and a dedupe key."""
    raw = dl.to_dict()
    # what each participant's statement says of where it came from (framework tags; text only)
    raw["transactions"] = [t | {"origin": _origin(t.get("query"))} for t in raw["transactions"]]
    out: DeadlockRecord = raw
    out["diagnosis"] = diagnose(dl).to_dict()
    out["key"] = deadlock_key(dl)
    out["too_deep"] = dl.too_deep
    return out


@lru_cache(maxsize=256)
def _origin_cached(query: str | None) -> dict[str, object]:
    return parse_tags(query).to_json()


def _origin(query: object) -> dict[str, object]:
    """parse_tags(query).to_json(), remembered per statement text (a storm repeats a few
    statements); a copy, as the record is the caller's to change."""
    found = _origin_cached(query if isinstance(query, str) else None)
    return {k: dict(v) if isinstance(v, dict) else v for k, v in found.items()}


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
