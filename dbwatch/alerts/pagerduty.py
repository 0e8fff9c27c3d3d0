"""PagerDuty Events API v2 (`kind = "pagerduty"`): a finding becomes a `trigger`, its clearing a
`resolve`, both with `dedup_key` = the finding's fingerprint, so one incident follows one
finding across repeats and daemon restarts. Pure: the body only; delivery.py sends it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from types import MappingProxyType

from ..records import AlertMessage
from ..snapshot.values import JSON, JSONObject
from ..targets.secrets import scrub_tree

# The API's own limits (Events API v2): the whole event, the dedup key, the summary.
MAX_EVENT_BYTES = 512 * 1024
MAX_DEDUP_KEY = 255
MAX_SUMMARY = 1024
# custom_details' evidence: well inside the event limit, whatever a finding carries
MAX_DETAILS_BYTES = 64 * 1024
SEVERITY: Mapping[str, str] = MappingProxyType(
    {"critical": "critical", "error": "error", "warning": "warning", "info": "info"}
)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _bounded(value: JSON, limit: int) -> JSON:
    """The evidence as is when it fits, else its JSON text cut to the limit (and said so)."""
    text = json.dumps(value, default=str, sort_keys=True)
    if len(text.encode()) <= limit:
        return value
    cut = text.encode()[: limit - 64].decode(errors="ignore")
    return {"truncated": True, "bytes": len(text.encode()), "json_prefix": cut}


def _summary(a: AlertMessage) -> str:
    text = f"[{a.rule}] {a.target}: {a.summary}".strip()
    return text if len(text) <= MAX_SUMMARY else text[: MAX_SUMMARY - 1] + "…"


def event(a: AlertMessage, routing_key: str) -> JSONObject:
    """The event for one outbox message (a finding firing or resolved). The routing key goes
    in after the scrub: it is a registered secret, and the only place it may appear."""
    dedup = a.fingerprint[:MAX_DEDUP_KEY]
    if a.status == "resolved":
        doc: JSONObject = {"event_action": "resolve", "dedup_key": dedup}
    else:
        rule = a.rule or "dbwatch"
        details: JSONObject = {
            "rule": rule,
            "target": a.target,
            "subject": a.subject,
            "summary": a.summary,
            "fix": a.fix,
            "confidence": a.confidence or "high",
            "runbook": f"dbwatch explain {rule}",
            "evidence": _bounded(a.evidence, MAX_DETAILS_BYTES),
        }
        doc = {
            "event_action": "trigger",
            "dedup_key": dedup,
            "payload": {
                "summary": _summary(a),
                "source": a.target or "dbwatch",
                "severity": SEVERITY.get(a.severity, "warning"),
                "timestamp": _iso(a.starts_at),
                "component": rule,
                "group": rule,
                "class": rule,
                "custom_details": details,
            },
            "client": "dbwatch",
        }
    scrubbed = scrub_tree(doc)
    assert isinstance(scrubbed, dict)
    return {"routing_key": routing_key, **scrubbed}
