"""What to send when: one alert per fingerprint per receiver, repeats after repeat_interval,
resolved when it clears, critical mutes warning on the same target+subject, min_severity.

route() runs inside the cycle's state transaction, so a finding's new status and the
messages it causes are committed together (a SIGKILL loses neither, duplicates neither).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..config import AlertConfig
from ..findings import severity_rank
from ..frozen import frozen
from ..records import ActionRecord, FindingRow
from .payloads import action_data, alert_data
from .state import AlertState

# Alertmanager forgets an alert at its endsAt: re-send well within that (Prometheus: 1m).
ALERTMANAGER_RESEND = 60.0


@frozen
class Policy:
    name: str
    kind: str
    min_severity: str
    repeat_interval: float
    send_resolved: bool

    @classmethod
    def of(cls, cfg: AlertConfig) -> Policy:
        repeat = cfg.repeat_interval
        if cfg.kind == "alertmanager":
            repeat = min(repeat, ALERTMANAGER_RESEND)
        return cls(cfg.name, cfg.kind, cfg.min_severity, repeat, cfg.send_resolved)


def muted(firing: Iterable[FindingRow]) -> set[str]:
    """Fingerprints of warnings whose target+subject also has a critical finding."""
    rows = list(firing)
    critical = {(r.target, r.subject) for r in rows if r.severity == "critical"}
    return {
        r.fingerprint for r in rows if r.severity == "warning" and (r.target, r.subject) in critical
    }


def route(
    state: AlertState,
    target: str,
    policies: Iterable[Policy],
    now: float,
    interval: float = 60.0,
    firing: list[FindingRow] | None = None,
) -> int:
    """Queue what this target's current state calls for; returns the number of messages.
    `firing`: what fires for the target now, when the caller has it (`Transitions.firing`
    of the update just made); else it is read from the state."""
    if not policies:  # no receiver: nothing to queue (an idle cycle of most fleets' targets)
        return 0
    if firing is None:
        firing = state.firing(target)
    silenced = muted(firing)
    valid_for = 4 * max(ALERTMANAGER_RESEND, interval)
    queued = 0
    with state.transaction():
        for p in policies:
            queued += _route_one(state, target, p, firing, silenced, now, valid_for)
    return queued


def _route_one(
    state: AlertState,
    target: str,
    p: Policy,
    firing: list[FindingRow],
    silenced: set[str],
    now: float,
    valid_for: float,
) -> int:
    sent = state.sent(target, p.name)
    floor = severity_rank(p.min_severity)
    eligible = {r.fingerprint: r for r in firing if severity_rank(r.severity) >= floor}
    queued = 0
    for fp, prev in sent.items():
        if prev.status != "firing" or fp in eligible:
            continue
        gone = state.finding(fp)
        if p.send_resolved and gone is not None:
            state.enqueue(
                p.name, fp, "resolved", alert_data(gone, "resolved", now, 0.0).to_json(), now
            )
            queued += 1
        state.mark_sent(p.name, fp, target, "resolved", prev.severity, now)
    for fp, row in eligible.items():
        last = sent.get(fp)
        if last is None or last.status == "resolved":
            if fp in silenced:
                continue
        elif not (
            now - last.last_sent >= p.repeat_interval
            or severity_rank(row.severity) > severity_rank(last.severity)
        ):
            continue
        state.enqueue(
            p.name, fp, "firing", alert_data(row, "firing", now, valid_for).to_json(), now
        )
        state.mark_sent(p.name, fp, target, "firing", row.severity, now)
        queued += 1
    return queued


def announce(
    state: AlertState, policies: Iterable[Policy], action: ActionRecord, now: float
) -> None:
    """Queue an action notification (terminate …) for every receiver."""
    data = action_data(action, now)
    fingerprint = data.fingerprint
    with state.transaction():
        for p in policies:
            if p.kind == "pagerduty":  # an action taken is no incident to page about
                continue
            state.enqueue(p.name, fingerprint, "action", data.to_json(), now)
