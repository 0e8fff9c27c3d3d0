"""What a cycle's findings cause: the state transition and the alerts it queues (one
transaction), the terminate action on what fires, the deadlock journal and the log lines."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from ..actions.daemon_action import DaemonTerminator
from ..alerts.router import announce, route
from ..deadlocks.record import latest_deadlock
from ..deadlocks.unshown import COUNTER_KEY, NOT_SHOWN_KEY, account, server_counter
from ..findings import Finding
from ..pipeline import TargetResult
from ..records import ActionRecord, FindingRow, Transitions
from ..snapshot import Snapshot
from ..targets import TargetSpec
from .setup import Setup
from .state import State

log = logging.getLogger("dbwatch.daemon.loop")


def apply_findings(
    state: State,
    setup: Setup,
    target: str,
    findings: Sequence[Finding],
    now: float,
    interval: float,
    keep_rules: set[str],
) -> Transitions:
    """The findings' transitions and the alerts they call for, committed together; routing
    decides on the rows just written (`Transitions.firing`), not on a read-back."""
    # durable only if something changed (State.update, the outbox call want_sync)
    with state.transaction(durable=False):
        tr = state.update(target, findings, now, setup.for_seconds, keep_rules=keep_rules)
        route(state, target, setup.policies, now, interval, firing=tr.firing)
    log_transitions(target, tr)
    return tr


class Actions:
    """The daemon's terminate action on the firing findings of the rules it covers."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.terminator = DaemonTerminator()  # the daemon's own: it remembers what it announced

    def run(
        self,
        setup: Setup,
        spec: TargetSpec,
        firing: Sequence[FindingRow],
        now: float,
        holds: Callable[[], bool],
        snapshot: Snapshot | None = None,
        findings: Sequence[Finding] = (),
    ) -> None:
        """`holds`: whether this daemon still holds the target (a fleet's lease); `snapshot`:
        this cycle's, whose pg.sessions rows the PostgreSQL action decides on; `findings`:
        this cycle's, which the firing rows were written from (see due_findings)."""
        cfg = setup.config.terminate
        if not cfg.enabled:
            return
        due = due_findings([r for r in firing if r.rule in cfg.rules], findings, now)
        if not due:
            return
        if not holds():
            return  # fenced: the lease moved on during this cycle; the new holder decides
        state = self.state

        def notify(action: ActionRecord) -> None:
            announce(state, setup.policies, action, time.time())

        try:
            done = self.terminator.run(spec, cfg, due, state, notify, snapshot)
        except Exception:
            log.exception("terminate action on %s failed", spec.name)
            return
        for action in done or []:
            log.warning("action on %s: %s", spec.name, action.to_json())


def due_findings(
    firing: Sequence[FindingRow], findings: Sequence[Finding], now: float
) -> list[tuple[Finding, float]]:
    """Each firing row's finding and how long it has fired. A row written this cycle stands
    for the cycle's own Finding (the first of its fingerprint at its severity: the one
    State.update kept), so terminate compares the row's very identity values, not their
    JSON text read back; a row of a rule that did not run this cycle is read from the state."""
    cycle: dict[tuple[str, str], Finding] = {}
    for f in findings:
        cycle.setdefault((f.fingerprint, f.severity), f)
    return [
        (cycle.get((r.fingerprint, r.severity)) or r.finding, now - (r.fired_at or r.first_seen))
        for r in firing
    ]


def record_deadlocks(state: State, result: TargetResult) -> int:
    """The latest InnoDB deadlock, deduplicated by its key (for `dbwatch deadlocks --history`),
    if it touches the target's scope (the same test as `dbwatch deadlocks URL` and MY102);
    returns how many were new (0 or 1)."""
    dl = latest_deadlock(result.snapshot)  # the record MY102 diagnosed this cycle
    if dl is None:
        return 0
    if not dl.in_scope(result.spec.scoped_database):
        return 0  # another schema's: not this target's to record, list, log or alert on
    if state.record_deadlock(result.spec.name, dl.key, dl.at, dl.to_json()):
        log.info("new deadlock on %s at %s", result.spec.name, dl.at)
        return 1
    return 0


def record_unshown(state: State, result: TargetResult, recorded: int, now: float) -> None:
    """Without log_file: the running count of deadlocks the server counted and the daemon did
    not record (`status`, MY102/PG102 `not_shown`, `deadlocks --history`)."""
    points = unshown_points(state, result, recorded)
    if points:
        state.record_metrics(result.spec.name, points, now)


def unshown_points(state: State, result: TargetResult, recorded: int) -> dict[str, float]:
    """record_unshown's series points, for the caller to record with its own (one insert a
    cycle); {} when the server's counter was not read."""
    name = result.spec.name
    u = account(state, name, server_counter(result.snapshot), recorded)
    if u.counter is None:
        return {}
    if u.not_shown:
        log.info(
            "%d deadlock(s) on %s not shown (%d since the count started)",
            u.not_shown,
            name,
            u.total,
        )
    return {COUNTER_KEY: float(u.counter), NOT_SHOWN_KEY: float(u.total)}


def log_transitions(target: str, tr: Transitions) -> None:
    for r in tr.fired:
        log.warning("firing %s %s on %s: %s: %s", r.severity, r.rule, target, r.subject, r.summary)
    for r in tr.resolved:
        log.info("resolved %s on %s: %s", r.rule, target, r.subject)
