"""How one recorded deadlock reads in a finding (MY102/PG102), wherever it was read from."""

from __future__ import annotations

from typing import TypedDict

from .record import DeadlockRecord


def victim_text(rec: DeadlockRecord) -> str:
    t = rec.victim_trx
    if t is None:
        return "victim unknown"
    q = " ".join((t.query or "").split())[:120]
    return f"thread {t.thread_id} ({t.user}) was rolled back: {q}"


class DeadlockFields(TypedDict):
    """A deadlock finding's own fields (Finding's keyword arguments)."""

    subject: str
    summary: str
    fix: str
    evidence: dict[str, object]
    identity: object


def deadlock_fields(rec: DeadlockRecord, read_from: str, source: str) -> DeadlockFields:
    """subject, summary, fix, evidence and identity of a finding for one deadlock record;
    `read_from` is shown in the summary, `source` kept in the evidence."""
    diag = rec.diagnosis
    return {
        "subject": f"deadlock {rec.at}",
        "summary": f"deadlock at {rec.at} ({read_from}) — {diag.pattern}: {victim_text(rec)}",
        "fix": diag.fix,
        "evidence": {
            "deadlock": rec.to_json(),
            "diagnosis": diag.to_dict(),
            "rules": list(diag.rules),
            "source": source,
        },
        "identity": rec.key,
    }
