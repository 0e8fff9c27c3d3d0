"""Finding: what a check reports, with a fingerprint stable across probe cycles."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("ok", "warning", "critical", "unknown")
_RANK = {"ok": 0, "warning": 1, "critical": 2, "unknown": 3}


def severity_rank(severity: str) -> int:
    return _RANK.get(severity, 0)


def fingerprint_of(rule: str, target: str, identity: Any) -> str:
    """Identity, not durations: a session is (pid, backend_start) / (thread, trx id)."""
    raw = json.dumps([rule, target, identity], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: str  # warning | critical | unknown
    target: str
    subject: str  # what it is about: "pid 1234", "table test.jobs"
    summary: str  # one line, for people
    fix: str  # the concrete fix
    evidence: dict[str, Any] = field(default_factory=dict)
    identity: Any = None  # what makes it "the same" finding on the next cycle
    confidence: str = "high"  # high | probable

    @property
    def fingerprint(self) -> str:
        ident = self.identity if self.identity is not None else self.subject
        return fingerprint_of(self.rule, self.target, ident)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "target": self.target,
            "subject": self.subject,
            "summary": self.summary,
            "evidence": self.evidence,
            "fix": self.fix,
            "fingerprint": self.fingerprint,
            "confidence": self.confidence,
        }
