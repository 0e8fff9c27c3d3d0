"""Pure payload builders: Alertmanager webhook v4 shape, Slack incoming webhook, Alertmanager API,
PagerDuty Events API v2 (pagerduty.py).

An outbox message holds an AlertMessage (alert_data, action_data); build() turns it into the
exact bytes and headers one receiver kind expects.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
from datetime import UTC, datetime
from types import MappingProxyType

from ..records import ActionRecord, AlertMessage, FindingRow, stored_json
from ..snapshot.values import JSON, JSONObject, to_str
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


def alert_data(row: FindingRow, status: str, now: float, valid_for: float) -> AlertMessage:
    """What an outbox message remembers of a finding (no secrets, JSON-able)."""
    d = row.data
    return AlertMessage(
        kind="finding",
        status=status,
        fingerprint=row.fingerprint,
        rule=row.rule,
        severity=row.severity,
        target=row.target,
        subject=row.subject,
        summary=to_str(d.get("summary")),
        fix=to_str(d.get("fix")),
        evidence=d.get("evidence", {}),
        confidence=to_str(d.get("confidence"), "high"),
        starts_at=row.fired_at or row.first_seen,
        ends_at=(row.resolved_at or now) if status == "resolved" else None,
        valid_for=valid_for,
        queued_at=now,
    )


def action_data(action: ActionRecord, now: float) -> AlertMessage:
    """An action taken (terminate …), announced as its own notification."""
    evidence = stored_json(action.to_json())  # the action as the outbox stores it
    text = json.dumps(evidence)
    return AlertMessage(
        kind="action",
        status="firing",
        fingerprint=hashlib.sha256(text.encode()).hexdigest()[:16],
        rule=action.rule,
        severity=action.severity,
        target=action.target,
        subject=action.subject,
        action=action.action,
        summary=action.summary or _action_summary(action),
        fix="",
        evidence=evidence,
        starts_at=now,
        ends_at=now,
        valid_for=0.0,
        queued_at=now,
    )


def _action_summary(a: ActionRecord) -> str:
    return f"dbwatch {a.action or 'action'} {a.subject} ({a.rule})"


def _labels(a: AlertMessage) -> dict[str, str]:
    labels = {
        "alertname": a.rule or "dbwatch",
        "severity": a.severity,
        "target": a.target,
        "subject": a.subject,
        "source": "dbwatch",
    }
    if a.kind == "action":
        labels["action"] = a.action or ""
    return labels


def _annotations(a: AlertMessage) -> dict[str, str]:
    out = {
        "summary": a.summary,
        "fix": a.fix,
        "evidence": json.dumps(a.evidence, default=str, sort_keys=True),
    }
    if a.rule and a.kind == "finding":
        out["runbook"] = f"dbwatch explain {a.rule}"
    if a.idempotency_key:
        out["idempotency_key"] = a.idempotency_key
    return out


def _ends(a: AlertMessage) -> str:
    return iso(a.ends_at) if a.ends_at is not None else ZERO_TIME


def webhook_body(receiver: str, a: AlertMessage) -> JSONObject:
    """Alertmanager's webhook payload (version 4) carrying one alert."""
    labels = _labels(a)
    annotations = _annotations(a)
    group = {"alertname": labels["alertname"], "target": labels["target"]}
    alert: JSONObject = {
        "status": a.status,
        "labels": dict(labels),
        "annotations": dict(annotations),
        "startsAt": iso(a.starts_at),
        "endsAt": _ends(a),
        "generatorURL": generator_url(a.target, a.rule),
        "fingerprint": a.fingerprint,
    }
    return {
        "version": "4",
        "groupKey": f'{{}}:{{alertname="{group["alertname"]}", target="{group["target"]}"}}',
        "truncatedAlerts": 0,
        "status": a.status,
        "receiver": receiver,
        "groupLabels": dict(group),
        "commonLabels": dict(labels),
        "commonAnnotations": dict(annotations),
        "externalURL": f"dbwatch://{socket.gethostname()}",
        "alerts": [alert],
        "idempotencyKey": a.idempotency_key or "",
    }


def _slack(text: str) -> str:
    """Text as Slack shows it, never as markup: a query or a framework tag saying
    `<!channel>` or `<https://…|…>` must not ping or link (Slack's own escaping of & < >)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_body(a: AlertMessage) -> JSONObject:
    rule, target, subject, summary = (_slack(t) for t in (a.rule, a.target, a.subject, a.summary))
    if a.kind == "action":
        head = f":hammer: *ACTION* {a.action or ''} {rule} on `{target}` — {subject}"
        return {"text": f"{head}\n{summary}"}
    if a.status == "resolved":
        head = f":white_check_mark: *RESOLVED* {rule} on `{target}` — {subject}"
        return {"text": f"{head}\n{summary}"}
    severity = a.severity
    icon = _ICON.get(severity, ":warning:")
    head = f"{icon} *{severity.upper()}* {rule} on `{target}` — {subject}"
    text = f"{head}\n{summary}"
    if a.fix:
        text += f"\n*Fix:* {_slack(a.fix)}"
    return {"text": text}


def alertmanager_body(a: AlertMessage, now: float) -> list[JSON]:
    """A postable alert; a firing one ends `valid_for` after sending unless re-sent."""
    if a.status == "resolved" or a.kind == "action":
        ends = iso(a.ends_at if a.ends_at is not None else now)
        if a.kind == "action":
            ends = iso(now + 300)
    else:
        ends = iso(now + max(a.valid_for, 60.0))
    return [
        {
            "labels": dict(_labels(a)),
            "annotations": dict(_annotations(a)),
            "startsAt": iso(a.starts_at),
            "endsAt": ends,
            "generatorURL": generator_url(a.target, a.rule),
        }
    ]


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def build(
    kind: str,
    receiver: str,
    a: AlertMessage,
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
    if a.idempotency_key:
        headers[IDEMPOTENCY_HEADER] = a.idempotency_key
    if secret:
        headers[SIGNATURE_HEADER] = sign(body, secret)
    return body, headers
