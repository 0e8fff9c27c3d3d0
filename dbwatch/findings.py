"""Finding: what a check reports, with a fingerprint stable across probe cycles; and the one
SessionIdentity that names the session a finding is about (read by terminate and the daemon).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from .snapshot.values import opt_int, opt_str

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
    raw = json.dumps([rule, target, identity], sort_keys=True, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def as_datetime(value: object) -> datetime | None:
    """A timestamp as read from the driver, or as stored in JSON (ISO text); else None."""
    if value is None or isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


def _int(value: object) -> int | None:
    """An id: a number or its integer text; other text is no id."""
    if isinstance(value, str):
        return int(value) if value.strip().lstrip("-").isdigit() else None
    return opt_int(value)


@dataclass(frozen=True)
class SessionIdentity:
    """One server session as a finding saw it; pids and thread ids are recycled, so a pid
    alone is never an identity. PostgreSQL: pid + backend_start (+ xact_start, the
    transaction); MySQL/MariaDB: thread id + InnoDB trx id."""

    engine: str  # postgresql | mysql | mariadb
    server: str  # the target's name
    database: str | None = None
    pid: int | None = None  # PostgreSQL backend pid
    backend_start: datetime | None = None
    xact_start: datetime | None = None  # None: no transaction (or not recorded)
    thread_id: int | None = None  # MySQL/MariaDB processlist id
    trx_id: str | None = None

    @property
    def is_mysql(self) -> bool:
        return self.engine in ("mysql", "mariadb")

    @property
    def usable(self) -> bool:
        """Enough to find the very same session again."""
        if self.is_mysql:
            return self.thread_id is not None and self.trx_id is not None
        return self.pid is not None and self.backend_start is not None

    def key(self) -> list[str | None]:
        """For fingerprints: stable text, whatever the driver's types."""
        parts = (self.pid, self.backend_start, self.xact_start, self.thread_id, self.trx_id)
        return [
            self.engine,
            self.server,
            self.database,
            *(
                None if p is None else (p.isoformat() if isinstance(p, datetime) else str(p))
                for p in parts
            ),
        ]

    def to_dict(self) -> dict[str, str | int | None]:
        return {
            "engine": self.engine,
            "server": self.server,
            "database": self.database,
            "pid": self.pid,
            "backend_start": None if self.backend_start is None else self.backend_start.isoformat(),
            "xact_start": None if self.xact_start is None else self.xact_start.isoformat(),
            "thread_id": self.thread_id,
            "trx_id": self.trx_id,
        }

    @classmethod
    def from_dict(cls, d: object) -> SessionIdentity | None:
        if not isinstance(d, Mapping) or not d.get("engine"):
            return None
        return cls(
            engine=str(d["engine"]),
            server=str(d.get("server") or ""),
            database=opt_str(d.get("database")),
            pid=_int(d.get("pid")),
            backend_start=as_datetime(d.get("backend_start")),
            xact_start=as_datetime(d.get("xact_start")),
            thread_id=_int(d.get("thread_id")),
            trx_id=opt_str(d.get("trx_id")),
        )

    @classmethod
    def pg(cls, server: str, row: Mapping[str, object]) -> SessionIdentity:
        """From a pg_stat_activity-shaped row (pid, backend_start, xact_start, database)."""
        return cls(
            engine="postgresql",
            server=server,
            database=opt_str(row.get("database")),
            pid=_int(row.get("pid")),
            backend_start=as_datetime(row.get("backend_start")),
            xact_start=as_datetime(row.get("xact_start")),
        )

    @classmethod
    def my(
        cls, engine: str, server: str, thread_id: object, trx_id: object, database: object = None
    ) -> SessionIdentity:
        return cls(
            engine=engine,
            server=server,
            database=opt_str(database),
            thread_id=_int(thread_id),
            trx_id=opt_str(trx_id),
        )


@dataclass(frozen=True)
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

    @property
    def fingerprint(self) -> str:
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
