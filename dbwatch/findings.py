"""Finding: what a check reports, with a fingerprint stable across probe cycles; and the one
SessionIdentity that names the session a finding is about (read by terminate and the daemon).
"""

from __future__ import annotations

from dataclasses import field
from functools import cached_property

from .frozen import frozen

# Re-exported: findings carry it; the snapshot rows derive it (PgSession.identity).
from .snapshot.identity import SessionIdentity

__all__ = [
    "EXIT_CODES",
    "SEVERITIES",
    "Finding",
    "SessionIdentity",
    "fingerprint_of",
    "nagios_status",
    "severity_rank",
]

SEVERITIES = ("ok", "warning", "critical", "unknown")
_RANK = {"ok": 0, "warning": 1, "critical": 2, "unknown": 3}


EXIT_CODES = {"ok": 0, "warning": 1, "critical": 2, "unknown": 3}


def nagios_status(critical: int, unknown: int, warning: int) -> tuple[str, int]:
    """The one verdict of `audit`, `watch --once` and `status` (README's exit table): any
    critical finding 2; else anything unread or unreachable (DW001 counts here, not as
    critical) 3; else any warning 1; else 0."""
    status = "critical" if critical else "unknown" if unknown else "warning" if warning else "ok"
    return status, EXIT_CODES[status]


def severity_rank(severity: str) -> int:
    return _RANK.get(severity, 0)


def fingerprint_of(rule: str, target: str, identity: object) -> str:
    """Identity, not durations: a session is (pid, backend_start) / (thread, trx id)."""
    import hashlib  # here: a table audit never asks for one (startup cost: OpenSSL's init)
    import json

    raw = json.dumps([rule, target, identity], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


@frozen
class Finding:
    rule: str
    severity: str  # warning | critical | unknown
    target: str
    subject: str  # what it is about: "pid 1234", "table test.jobs"
    summary: str  # one line, for people
    fix: str  # the concrete fix
    evidence: dict[str, object] = field(default_factory=dict)
    identity: object = None  # what makes it "the same" finding on the next cycle
    confidence: str = "high"  # high | probable
    # the session a terminate action would end (lock rules: the chain's root)
    session: SessionIdentity | None = None

    @cached_property
    def fingerprint(self) -> str:
        """Once per finding (its fields are frozen): a cycle asks for it several times."""
        ident = self.identity if self.identity is not None else self.subject
        if self.session is not None:
            ident = [ident, self.session.key()]
        return fingerprint_of(self.rule, self.target, ident)

    def to_dict(self) -> dict[str, object]:
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
            "session": None if self.session is None else self.session.to_dict(),
        }
