"""Pure payload builders: Alertmanager webhook v4 shape, Slack incoming webhook, Alertmanager API,
PagerDuty Events API v2 (pagerduty.py).

An outbox message holds an `alert` dict (see alert_data); build() turns it into the exact
bytes and headers one receiver kind expects.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
from collections.abc import Mapping
from datetime import UTC, datetime
from types import MappingProxyType

from ..records import FindingRow, loads
from ..snapshot.values import JSON, JSONObject, to_float, to_str
from ..targets.secrets import scrub_tree
from . import pagerduty

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


def _s(a: JSONObject, key: str, default: str = "") -> str:
    return to_str(a.get(key), default)


def alert_data(row: FindingRow, status: str, now: float, valid_for: float) -> JSONObject:
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


def action_data(action: Mapping[str, object], now: float) -> JSONObject:
    """An action taken (terminate …), announced as its own notification."""
    text = json.dumps(action, default=str, sort_keys=True)
    evidence = loads(text)  # the action as the outbox stores it
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
        "evidence": evidence,
        "starts_at": now,
        "ends_at": now,
        "valid_for": 0.0,
        "queued_at": now,
    }


def _action_summary(a: Mapping[str, object]) -> str:
    return f"dbwatch {a.get('action', 'action')} {a.get('subject', '')} ({a.get('rule', '')})"


def _labels(a: JSONObject) -> dict[str, str]:
    labels = {
        "alertname": _s(a, "rule") or "dbwatch",
        "severity": _s(a, "severity"),
        "target": _s(a, "target"),
        "subject": _s(a, "subject"),
        "source": "dbwatch",
    }
    if a.get("kind") == "action":
        labels["action"] = _s(a, "action")
    return labels


def _annotations(a: JSONObject) -> dict[str, str]:
    out = {
        "summary": _s(a, "summary"),
        "fix": _s(a, "fix"),
        "evidence": json.dumps(a.get("evidence", {}), default=str, sort_keys=True),
    }
    if a.get("rule") and a.get("kind") == "finding":
        out["runbook"] = f"dbwatch explain {a['rule']}"
    if a.get("idempotency_key"):
        out["idempotency_key"] = str(a["idempotency_key"])
    return out


def _ends(a: JSONObject) -> str:
    return iso(to_float(a["ends_at"])) if a.get("ends_at") is not None else ZERO_TIME


def webhook_body(receiver: str, a: JSONObject) -> JSONObject:
    """Alertmanager's webhook payload (version 4) carrying one alert."""
    labels = _labels(a)
    annotations = _annotations(a)
    group = {"alertname": labels["alertname"], "target": labels["target"]}
    alert: JSONObject = {
        "status": _s(a, "status"),
        "labels": dict(labels),
        "annotations": dict(annotations),
        "startsAt": iso(to_float(a.get("starts_at"))),
        "endsAt": _ends(a),
        "generatorURL": generator_url(_s(a, "target"), _s(a, "rule")),
        "fingerprint": _s(a, "fingerprint"),
    }
    return {
        "version": "4",
        "groupKey": f'{{}}:{{alertname="{group["alertname"]}", target="{group["target"]}"}}',
        "truncatedAlerts": 0,
        "status": _s(a, "status"),
        "receiver": receiver,
        "groupLabels": dict(group),
        "commonLabels": dict(labels),
        "commonAnnotations": dict(annotations),
        "externalURL": f"dbwatch://{socket.gethostname()}",
        "alerts": [alert],
        "idempotencyKey": str(a.get("idempotency_key") or ""),
    }


def _slack(a: JSONObject, key: str) -> str:
    """Text as Slack shows it, never as markup: a query or a framework tag saying
    `<!channel>` or `<https://…|…>` must not ping or link (Slack's own escaping of & < >)."""
    return _s(a, key).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(a: JSONObject) -> JSONObject:
    rule, target, subject, summary = (
        _slack(a, k) for k in ("rule", "target", "subject", "summary")
    )
    if a.get("kind") == "action":
        head = f":hammer: *ACTION* {_s(a, 'action')} {rule} on `{target}` — {subject}"
        return {"text": f"{head}\n{summary}"}
    if a.get("status") == "resolved":
        head = f":white_check_mark: *RESOLVED* {rule} on `{target}` — {subject}"
        return {"text": f"{head}\n{summary}"}
    severity = _s(a, "severity")
    icon = _ICON.get(severity, ":warning:")
    head = f"{icon} *{severity.upper()}* {rule} on `{target}` — {subject}"
    text = f"{head}\n{summary}"
    if a.get("fix"):
        text += f"\n*Fix:* {_slack(a, 'fix')}"
    return {"text": text}


def alertmanager_body(a: JSONObject, now: float) -> list[JSON]:
    """A postable alert; a firing one ends `valid_for` after sending unless re-sent."""
    if a.get("status") == "resolved" or a.get("kind") == "action":
        ends = iso(to_float(a["ends_at"]) if a.get("ends_at") is not None else now)
        if a.get("kind") == "action":
            ends = iso(now + 300)
    else:
        ends = iso(now + max(to_float(a.get("valid_for")), 60.0))
    return [
        {
            "labels": dict(_labels(a)),
            "annotations": dict(_annotations(a)),
            "startsAt": iso(to_float(a.get("starts_at"))),
            "endsAt": ends,
            "generatorURL": generator_url(_s(a, "target"), _s(a, "rule")),
        }
    ]


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def build(
    kind: str,
    receiver: str,
    a: JSONObject,
    now: float,
    secret: str | None = None,
    routing_key: str | None = None,
) -> tuple[bytes, dict[str, str]]:
    """The exact body and headers for one receiver kind."""
    doc: JSON
    if kind == "pagerduty":  # scrubbed inside: its routing key is a secret that must stay
        body = json.dumps(pagerduty.event(a, routing_key or ""), default=str).encode()
        return body, {"Content-Type": "application/json", "User-Agent": "dbwatch"}
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
