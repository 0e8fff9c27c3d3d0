"""How one recorded deadlock reads in a finding (MY102/PG102), wherever it was read from."""

from __future__ import annotations

from typing import Any


def victim_text(rec: dict[str, Any]) -> str:
    for t in rec.get("transactions", []):
        if t.get("victim"):
            q = " ".join(str(t.get("query") or "").split())[:120]
            return f"thread {t.get('thread_id')} ({t.get('user')}) was rolled back: {q}"
    return "victim unknown"


def deadlock_fields(rec: dict[str, Any], read_from: str, source: str) -> dict[str, Any]:
    """subject, summary, fix, evidence and identity of a finding for one deadlock record;
    `read_from` is shown in the summary, `source` kept in the evidence."""
    diag = rec.get("diagnosis") or {}
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
