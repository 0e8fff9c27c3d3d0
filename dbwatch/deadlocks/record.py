"""A deadlock as dbwatch reports and keeps it: the parser's Deadlock (SPEC §6 object) with its
diagnosis, a dedupe key and the too-deep flag. Built where the deadlock is used (MY102, the
daemon's deadlock journal and log tail, `dbwatch deadlocks`), never in a probe: the snapshot
keeps the parsed Deadlock only."""

from __future__ import annotations

from ..parsers.deadlock_model import Deadlock
from ..sqlpatterns.tags import parse_tags
from .diagnosis import diagnose

# The record's JSON object: one shape for MY102/PG102 evidence, the daemon's history, the
# dashboard and `dbwatch deadlocks`.
DeadlockRecord = dict[str, object]


def deadlock_record(dl: Deadlock) -> DeadlockRecord:
    """The SPEC §6 deadlock object with its diagnosis and a dedupe key."""
    out: DeadlockRecord = dict(dl.to_dict())
    # what each participant's statement says of where it came from (framework tags; text only)
    out["transactions"] = [
        t | {"origin": parse_tags(t.get("query")).to_json()} for t in dl.to_dict()["transactions"]
    ]
    out["diagnosis"] = diagnose(dl).to_dict()
    out["key"] = deadlock_key(dl)
    out["too_deep"] = dl.too_deep
    return out


def deadlock_key(dl: Deadlock) -> str:
    """The trx ids (unique on a server; the status text and the error log may print a
    timestamp a second apart), else timestamp and process ids."""
    at, ids = dl.identity
    if ids and all(ids):
        return "trx:" + ",".join(str(i) for i in ids)
    parts = [str(i) if i is not None else f"p{t.thread_id}" for i, t in zip(ids, dl.transactions)]
    return f"{at}|{','.join(parts)}"
