"""Typed records of the daemon's state: what `State` returns and what its readers narrow.

Kept below both `daemon/` (which writes them) and `alerts/`, `web/`, `commands/` (which read
them), so none of those readers has to import the daemon.

A state row is read once, here, into a frozen record (or a JSON object, for the reads that
are shown as they are); nothing downstream sees the driver's untyped rows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .findings import Finding, SessionIdentity
from .snapshot.values import JSON, JSONObject, Row, as_json, opt_float, to_float, to_int, to_str
from .targets.secrets import scrub_tree, secrets_known

__all__ = [
    "FindingRow",
    "OutboxMessage",
    "SentRow",
    "Transitions",
    "finding_data",
    "json_object",
    "loads",
    "row_json",
]


def loads(text: object) -> JSON:
    """A JSON column: its value; text that is not JSON stays text; anything else as JSON."""
    if not isinstance(text, str):
        return as_json(text)
    try:
        value: JSON = json.loads(text)  # JSON text decodes to JSON values: nothing to convert
    except ValueError:
        return text
    return value


def json_object(value: JSON) -> JSONObject:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def row_json(row: Row, *decode: str) -> JSONObject:
    """A state row as a JSON object; the columns in `decode` hold JSON text and are decoded."""
    return {k: loads(v) if k in decode else as_json(v) for k, v in row.items()}


def finding_data(f: Finding) -> str:
    """What `findings.data` stores of a finding (secrets never stored)."""
    d = f.to_dict()
    d["identity"] = f.identity
    # without a registered password scrub_tree changes no string: the same text, no copy
    return json.dumps(scrub_tree(d) if secrets_known() else d, default=str, sort_keys=True)


@dataclass(frozen=True)
class FindingRow:
    fingerprint: str
    target: str
    rule: str
    severity: str
    subject: str
    status: str
    first_seen: float
    fired_at: float | None
    last_seen: float
    resolved_at: float | None
    data: JSONObject

    @classmethod
    def from_row(cls, r: Row) -> FindingRow:
        return cls(
            to_str(r["fingerprint"]),
            to_str(r["target"]),
            to_str(r["rule"]),
            to_str(r["severity"]),
            to_str(r["subject"]),
            to_str(r["status"]),
            to_float(r["first_seen"]),
            opt_float(r["fired_at"]),
            to_float(r["last_seen"]),
            opt_float(r["resolved_at"]),
            json_object(loads(r["data"])),
        )

    @property
    def summary(self) -> str:
        return to_str(self.data.get("summary"))

    @property
    def finding(self) -> Finding:
        d = self.data
        evidence = d.get("evidence")
        return Finding(
            rule=self.rule,
            severity=self.severity,
            target=self.target,
            subject=self.subject,
            summary=to_str(d.get("summary")),
            fix=to_str(d.get("fix")),
            evidence=dict(evidence) if isinstance(evidence, dict) else {},
            identity=d.get("identity"),
            confidence=to_str(d.get("confidence"), "high"),
            session=SessionIdentity.from_dict(d.get("session")),
        )


@dataclass
class Transitions:
    """What one `State.update` changed, and what fires for the target afterwards (the rows
    just written, so routing and actions need not read them back)."""

    fired: list[FindingRow] = field(default_factory=list)
    resolved: list[FindingRow] = field(default_factory=list)
    pending: int = 0
    firing: list[FindingRow] = field(default_factory=list)


@dataclass(frozen=True)
class SentRow:
    """The last alert one receiver got for one finding."""

    fingerprint: str
    status: str
    severity: str
    first_sent: float
    last_sent: float

    @classmethod
    def from_row(cls, r: Row) -> SentRow:
        return cls(
            to_str(r["fingerprint"]),
            to_str(r["status"]),
            to_str(r["severity"]),
            to_float(r["first_sent"]),
            to_float(r["last_sent"]),
        )


@dataclass(frozen=True)
class OutboxMessage:
    """One queued alert message (a row of `outbox`, its payload decoded)."""

    id: int
    receiver: str
    fingerprint: str
    event: str
    payload: JSONObject
    attempts: int
    rev: int

    @classmethod
    def of(cls, r: JSONObject) -> OutboxMessage:
        return cls(
            to_int(r.get("id")),
            to_str(r.get("receiver")),
            to_str(r.get("fingerprint")),
            to_str(r.get("event")),
            json_object(r.get("payload")),
            to_int(r.get("attempts")),
            to_int(r.get("rev")),
        )
