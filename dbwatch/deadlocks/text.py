"""How one recorded deadlock reads in a finding (MY102/PG102), wherever it was read from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from ..snapshot.values import as_row, as_rows


def victim_text(rec: Mapping[str, object]) -> str:
    for t in as_rows(rec.get("transactions")):
        if t.get("victim"):
            q = " ".join(str(t.get("query") or "").split())[:120]
            return f"thread {t.get('thread_id')} ({t.get('user')}) was rolled back: {q}"
    return "victim unknown"


class DeadlockFields(TypedDict):
    """A deadlock finding's own fields (Finding's keyword arguments)."""

    subject: str
    summary: str
    fix: str
    evidence: dict[str, object]
    identity: object


def deadlock_fields(rec: Mapping[str, object], read_from: str, source: str) -> DeadlockFields:
    """subject, summary, fix, evidence and identity of a finding for one deadlock record;
    `read_from` is shown in the summary, `source` kept in the evidence."""
    diag = as_row(rec.get("diagnosis"))
    return {
        "subject": f"deadlock {rec.get('at')}",
        "summary": f"deadlock at {rec.get('at')} ({read_from}) — "
        f"{diag.get('pattern', 'generic')}: {victim_text(rec)}",
        "fix": str(diag.get("fix") or ""),
        "evidence": {
            "deadlock": rec,
            "diagnosis": diag,
            "rules": diag.get("rules", []),
            "source": source,
        },
        "identity": rec.get("key"),
    }
