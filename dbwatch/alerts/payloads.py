"""Pure payload builders: Alertmanager webhook v4 shape, Slack incoming webhook, Alertmanager API.

An outbox message holds an `alert` dict (see alert_data); build() turns it into the exact
bytes and headers one receiver kind expects.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from ..daemon.state import FindingRow
from ..targets.secrets import scrub_tree

ZERO_TIME = "0001-01-01T00:00:00Z"  # Alertmanager's "no end yet"
SIGNATURE_HEADER = "X-Dbwatch-Signature"
IDEMPOTENCY_HEADER = "Idempotency-Key"
_ICON = MappingProxyType(
    {"critical": ":red_circle:", "warning": ":warning:", "unknown": ":grey_question:"}
)


def iso(ts: float) -> str:
    dt = datetime.fromtimestamp(ts, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def generator_url(target: str, rule: str) -> str:
    return f"dbwatch://{socket.gethostname()}/{target}/{rule}"


def alert_data(row: FindingRow, status: str, now: float, valid_for: float) -> dict[str, Any]:
    """What an outbox message remembers of a finding (no secrets, JSON-able)."""
    d = row.data
    return {
        "kind": "finding",
        "status": status,
        "fingerprint": row.fingerprint,
        "rule": row.rule,
        "severity": row.severity,
        "target": row.target,
        "subject": row.subject,
        "summary": d.get("summary", ""),
        "fix": d.get("fix", ""),
        "evidence": d.get("evidence", {}),
        "confidence": d.get("confidence", "high"),
        "starts_at": row.fired_at or row.first_seen,
        "ends_at": (row.resolved_at or now) if status == "resolved" else None,
        "valid_for": valid_for,
        "queued_at": now,
    }


def action_data(action: dict[str, Any], now: float) -> dict[str, Any]:
    """An action taken (terminate …), announced as its own notification."""
    text = json.dumps(action, default=str, sort_keys=True)
    return {
        "kind": "action",
        "status": "firing",
        "fingerprint": hashlib.sha256(text.encode()).hexdigest()[:16],
        "rule": str(action.get("rule", "")),
        "severity": str(action.get("severity", "warning")),
        "target": str(action.get("target", "")),
        "subject": str(action.get("subject", "")),
        "action": str(action.get("action", "")),
        "summary": str(action.get("summary") or _action_summary(action)),
        "fix": "",
        "evidence": action,
        "starts_at": now,
        "ends_at": now,
        "valid_for": 0.0,
        "queued_at": now,
    }


def _action_summary(a: dict[str, Any]) -> str:
    return f"dbwatch {a.get('action', 'action')} {a.get('subject', '')} ({a.get('rule', '')})"


def _labels(a: dict[str, Any]) -> dict[str, str]:
    labels = {
        "alertname": a["rule"] or "dbwatch",
        "severity": a["severity"],
        "target": a["target"],
        "subject": a["subject"],
        "source": "dbwatch",
    }
    if a.get("kind") == "action":
        labels["action"] = a.get("action", "")
    return labels


def _annotations(a: dict[str, Any]) -> dict[str, str]:
    out = {
        "summary": a["summary"],
        "fix": a["fix"],
        "evidence": json.dumps(a.get("evidence", {}), default=str, sort_keys=True),
    }
    if a.get("rule") and a.get("kind") == "finding":
        out["runbook"] = f"dbwatch explain {a['rule']}"
    if a.get("idempotency_key"):
        out["idempotency_key"] = str(a["idempotency_key"])
    return out


def _ends(a: dict[str, Any]) -> str:
    return iso(a["ends_at"]) if a.get("ends_at") is not None else ZERO_TIME


def webhook_body(receiver: str, a: dict[str, Any]) -> dict[str, Any]:
    """Alertmanager's webhook payload (version 4) carrying one alert."""
    labels = _labels(a)
    group = {"alertname": labels["alertname"], "target": labels["target"]}
    alert = {
        "status": a["status"],
        "labels": labels,
        "annotations": _annotations(a),
        "startsAt": iso(a["starts_at"]),
        "endsAt": _ends(a),
        "generatorURL": generator_url(a["target"], a["rule"]),
        "fingerprint": a["fingerprint"],
    }
    return {
        "version": "4",
        "groupKey": f'{{}}:{{alertname="{group["alertname"]}", target="{group["target"]}"}}',
        "truncatedAlerts": 0,
        "status": a["status"],
        "receiver": receiver,
        "groupLabels": group,
        "commonLabels": labels,
        "commonAnnotations": alert["annotations"],
        "externalURL": f"dbwatch://{socket.gethostname()}",
        "alerts": [alert],
        "idempotencyKey": str(a.get("idempotency_key") or ""),
    }


def slack_body(a: dict[str, Any]) -> dict[str, Any]:
    if a.get("kind") == "action":
        head = f":hammer: *ACTION* {a['action']} {a['rule']} on `{a['target']}` — {a['subject']}"
        return {"text": f"{head}\n{a['summary']}"}
    if a["status"] == "resolved":
        head = f":white_check_mark: *RESOLVED* {a['rule']} on `{a['target']}` — {a['subject']}"
        return {"text": f"{head}\n{a['summary']}"}
    icon = _ICON.get(a["severity"], ":warning:")
    head = f"{icon} *{a['severity'].upper()}* {a['rule']} on `{a['target']}` — {a['subject']}"
    text = f"{head}\n{a['summary']}"
    if a.get("fix"):
        text += f"\n*Fix:* {a['fix']}"
    return {"text": text}


def alertmanager_body(a: dict[str, Any], now: float) -> list[dict[str, Any]]:
    """A postable alert; a firing one ends `valid_for` after sending unless re-sent."""
    if a["status"] == "resolved" or a.get("kind") == "action":
        ends = iso(a["ends_at"] if a.get("ends_at") is not None else now)
        if a.get("kind") == "action":
            ends = iso(now + 300)
    else:
        ends = iso(now + max(float(a.get("valid_for") or 0), 60.0))
    return [
        {
            "labels": _labels(a),
            "annotations": _annotations(a),
            "startsAt": iso(a["starts_at"]),
            "endsAt": ends,
            "generatorURL": generator_url(a["target"], a["rule"]),
        }
    ]


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def build(
    kind: str, receiver: str, a: dict[str, Any], now: float, secret: str | None = None
) -> tuple[bytes, dict[str, str]]:
    """The exact body and headers for one receiver kind."""
    doc: Any
    if kind == "slack":
        doc = slack_body(a)
    elif kind == "alertmanager":
        doc = alertmanager_body(a, now)
    else:
        doc = webhook_body(receiver, a)
    doc = scrub_tree(doc)  # secrets never leave: the last step before sending
    body = json.dumps(doc, default=str, sort_keys=True).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "dbwatch"}
    if a.get("idempotency_key"):
        headers[IDEMPOTENCY_HEADER] = str(a["idempotency_key"])
    if secret:
        headers[SIGNATURE_HEADER] = sign(body, secret)
    return body, headers
