"""The daemon's [terminate] action: which firing findings are eligible, and what to do about
each, reading the session straight from the finding's SessionIdentity."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Protocol

from ..checks.models import pg_lock_graph
from ..config import TerminateConfig
from ..errors import TargetError
from ..findings import Finding
from ..records import ActionRecord, json_object, stored_json
from ..snapshot import Snapshot
from ..snapshot.pg import PG_SESSIONS
from ..snapshot.values import opt_float
from ..targets import TargetSpec, open_target
from ..targets.own import OWN_SESSIONS
from ..targets.secrets import scrub
from .guards import Decision, Pin, Policy, Session, describe, intended_action, protection
from .sessions import candidates, read_sessions
from .terminate import execute, same_session, who

log = logging.getLogger(__name__)
Notify = Callable[[ActionRecord], None]


class ActionLog(Protocol):
    """Where the daemon records its actions (daemon.state.State)."""

    def record_action(
        self, target: str, rule: str, fingerprint: str, subject: str, action: str, detail_json: str
    ) -> None: ...


def finding_age(f: Finding, firing_for: float) -> float:
    """The offender's age from the evidence; how long it has fired if the evidence has none."""
    age = opt_float(f.evidence.get("age_seconds"))
    return float(firing_for) if age is None else age


def eligible(
    firing: Iterable[tuple[Finding, float]], cfg: TerminateConfig, target: str
) -> list[Finding]:
    """Findings of cfg.rules on this target, past cfg.after; one per session, oldest first.
    The age only orders and filters: the decision reads the live session's own age."""
    out: list[Finding] = []
    seen: set[object] = set()
    rows = [
        (f, finding_age(f, secs))
        for f, secs in firing
        if f.rule in cfg.rules and f.target == target
    ]
    for f, age in sorted(rows, key=lambda r: -r[1]):
        if age < cfg.after:
            continue
        ident = f.session
        key: object = tuple(ident.key()) if ident is not None and ident.usable else f.fingerprint
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out


def daemon_decision(
    f: Finding,
    live: list[Session],
    policy: Policy,
    cfg: TerminateConfig,
    database: str | None = None,
) -> Decision:
    """Pure: what to do about one eligible finding, given the sessions read just now.
    `database`: the target's PostgreSQL scope (None: every database)."""
    ident = f.session  # derived by the check from the session row
    if ident is not None and not ident.is_mysql and database and ident.database != database:
        stub = Session.named_by(f.target, ident)
        why = (
            f"session of database {ident.database}, outside this target's scope ({database}); "
            "set all_databases = true on the target to act there"
        )
        return Decision(stub, "skipped_protected", why)
    if ident is None or not ident.usable:
        kind = str(f.evidence.get("kind") or "finding")
        fix = scrub(f.fix)  # as the state stores a finding's text (the daemon's is this cycle's)
        stub = Session(
            target=f.target,
            engine=ident.engine if ident is not None else "postgresql",
            pin=Pin(kind=kind if kind != "backend" else "finding", name=f.subject, statement=fix),
        )
        return Decision(
            stub,
            "skipped_protected",
            f"{f.rule} names no session dbwatch may end ({f.subject}): {fix}",
        )
    s = next((s for s in live if same_session(ident, s)), None)
    if s is None or (not ident.is_mysql and s.xact_start != ident.xact_start):
        stub = s or Session.named_by(f.target, ident)
        return Decision(stub, "gone", "the session or transaction of the finding has ended")
    guard = protection(s, policy)
    if guard:
        return Decision(s, "skipped_protected", guard)
    if s.age is None or s.age < cfg.after:
        return Decision(s, "gone", "its transaction is now younger than terminate.after")
    return Decision(s, intended_action(s, policy), f"{f.rule} firing: {describe(s)}")


class DaemonTerminator:
    """Remembers what was announced, so a would-have is announced once per process."""

    def __init__(self) -> None:
        self._announced: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def run(
        self,
        spec: TargetSpec,
        cfg: TerminateConfig,
        firing: list[tuple[Finding, float]],
        state: ActionLog | None,
        notify: Notify,
        snapshot: Snapshot | None = None,
    ) -> list[ActionRecord]:
        """The [terminate] action for one target and cycle; returns the new actions.

        Only when cfg.enabled; only findings of cfg.rules past cfg.after; at most
        cfg.max_per_cycle sessions; a dry run unless cfg.dry_run is false. Every action is
        recorded in the state, logged and announced. PostgreSQL: the sessions are the
        cycle's snapshot rows (pg.sessions), not a new read; the kill statement re-checks
        pid, backend_start and xact_start."""
        if not cfg.enabled:
            return []
        wanted = eligible(firing, cfg, spec.name)
        if not wanted:
            return []
        rows = snapshot.get(PG_SESSIONS) if snapshot is not None else None
        if spec.engine == "postgresql" and rows is None:
            log.warning("terminate on %s skipped: this cycle read no sessions", spec.name)
            return []
        try:
            conn = open_target(spec)
        except TargetError as exc:
            log.warning("terminate on %s skipped: %s", spec.name, exc.detail)
            return []
        try:
            database = spec.scoped_database if conn.engine == "postgresql" else None
            if rows is not None and conn.engine == "postgresql":
                own = OWN_SESSIONS.ids(conn.server_key)
                graph = pg_lock_graph(snapshot) if snapshot is not None else None
                live = candidates(rows, spec.name, own, database, graph=graph)
            else:
                live = read_sessions(conn, spec.name, database=database)
            policy = Policy.from_config(cfg)
            out, acted = [], 0
            for f in wanted:
                d = daemon_decision(f, live, policy, cfg, database)
                if d.action.startswith("would_"):
                    if acted >= cfg.max_per_cycle:
                        continue  # next cycle
                    acted += 1
                    if not cfg.dry_run:
                        d = execute(conn, d, policy)
                reported = self._report(spec, f, d, cfg, state, notify)
                if reported is not None:
                    out.append(reported)
            return out
        finally:
            conn.close()

    def _report(
        self,
        spec: TargetSpec,
        f: Finding,
        d: Decision,
        cfg: TerminateConfig,
        state: ActionLog | None,
        notify: Notify,
    ) -> ActionRecord | None:
        key = (spec.name, f.fingerprint)
        with self._lock:
            if self._announced.get(key) == d.action and d.action not in ("terminated", "cancelled"):
                return None
            self._announced[key] = d.action
        rec = ActionRecord(
            decision=json_object(stored_json(d.to_dict(), sort_keys=False)),
            rule=f.rule,
            fingerprint=f.fingerprint,
            subject=f.subject,
            severity=f.severity,
            finding=scrub(f.summary),  # as the state stores a finding's text
            dry_run=cfg.dry_run,
            summary=f"dbwatch {d.action} {who(d.session)} on {spec.name} ({f.rule}): {d.reason}",
        )
        if state is not None:
            state.record_action(
                spec.name, f.rule, f.fingerprint, f.subject, d.action, json.dumps(rec.to_json())
            )
        level = (
            logging.WARNING if d.action in ("terminated", "cancelled", "failed") else logging.INFO
        )
        log.log(
            level,
            "terminate on %s: %s %s (%s): %s",
            spec.name,
            d.action,
            f.subject,
            f.rule,
            d.reason,
        )
        try:
            notify(rec)
        except Exception:  # an alert receiver must never undo or block an action
            log.exception("announcing the %s of %s on %s failed", d.action, f.subject, spec.name)
        return rec
