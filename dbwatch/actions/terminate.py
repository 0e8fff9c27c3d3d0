"""Cancel or terminate sessions with identity re-checks at the moment of the kill.

Shared by `dbwatch terminate` (run_target) and the daemon (actions.daemon_action).
PostgreSQL: one statement re-checks pid, backend_start and xact_start and signals.
MySQL/MariaDB: actions.my_kill re-establishes the identity from live sources first.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import replace

from ..errors import ProbeError
from ..findings import Finding, SessionIdentity
from ..frozen import frozen
from ..snapshot.values import opt_float, opt_int, opt_str
from ..targets import Connection, TargetSpec, open_target
from .guards import Criteria, Decision, Pin, Policy, Session, plan
from .my_kill import GONE, my_kill
from .sessions import holder_session, quote_literal, read_sessions
from .statements import action_sql

log = logging.getLogger(__name__)
WAIT_MS = 3000  # PG 14+: wait this long for a terminated backend to exit
# PG201's holder kinds that are not sessions: listed with their statement, never ended here
_HOLDER_KINDS = {
    "prepared": "prepared_xact",
    "slot": "replication_slot",
    "standby_feedback": "standby_feedback",
}


@frozen
class Request:
    """What `dbwatch terminate` asks of one target."""

    criteria: Criteria
    policy: Policy
    limit: int | None = None
    execute: bool = False
    rollback_prepared: tuple[str, ...] = ()
    drop_slots: tuple[str, ...] = ()


def run_target(
    spec: TargetSpec, req: Request, horizon: Iterable[Finding] | None = None
) -> tuple[list[Decision], int]:
    """Plan (and with execute, carry out) one target's actions; returns them and the number
    --limit left out. `horizon`: PG201's findings on this target (--holding-xmin selects
    what PG201 reports, nothing else). TargetError propagates: the caller reports it."""
    conn = open_target(spec)
    try:
        decisions: list[Decision] = []
        left_out = 0
        if req.criteria.given:
            database = spec.scoped_database if conn.engine == "postgresql" else None
            sessions = read_sessions(conn, spec.name, req.criteria.blocking, database)
            if req.criteria.holding_xmin:
                sessions = mark_holders(sessions, list(horizon or ()), spec.name)
            decisions, left_out = plan(sessions, req.criteria, req.policy, req.limit)
            if req.execute:
                decisions = [execute(conn, d, req.policy) for d in decisions]
        decisions += explicit_actions(conn, spec, req)
        return decisions, left_out
    finally:
        conn.close()


def same_session(ident: SessionIdentity, s: Session) -> bool:
    """The live session is the one the identity names (the transaction is checked apart)."""
    if s.kind != "session":
        return False
    if ident.is_mysql:
        return s.thread_id == ident.thread_id and s.trx_id == ident.trx_id
    return s.pid == ident.pid and s.backend_start == ident.backend_start


def mark_holders(sessions: list[Session], pg201: list[Finding], target: str) -> list[Session]:
    """Flag the sessions PG201 reports as horizon holders (its model, its thresholds) and
    add the holders that are not sessions, with the statement that ends them."""
    idents = [f.session for f in pg201 if f.rule == "PG201" and f.session is not None]
    out = [
        replace(s, holds_horizon=True) if any(same_session(i, s) for i in idents) else s
        for s in sessions
    ]
    for f in pg201:
        kind = _HOLDER_KINDS.get(str(f.evidence.get("kind")))
        if f.rule != "PG201" or f.session is not None or kind is None:
            continue
        ev = f.evidence
        name = ev.get("gid") or ev.get("slot") or ev.get("application") or f.subject
        age = ev.get("age_seconds")
        pin = Pin(
            kind=kind,
            name=str(name),
            statement=_holder_statement(kind, str(name), f.fix),
            database=opt_str(ev.get("database")),
            user=opt_str(ev.get("user")),
            xid_age=opt_int(ev.get("xid_age")) or None,
            age=opt_float(age),
        )
        out.append(Session(target=target, engine="postgresql", pin=pin, holds_horizon=True))
    return out


def _holder_statement(kind: str, name: str, fix: str) -> str:
    if kind == "prepared_xact":
        return f"ROLLBACK PREPARED {quote_literal(name)}"
    if kind == "replication_slot":
        return f"SELECT pg_drop_replication_slot({quote_literal(name)})"
    return fix


def execute(conn: Connection, d: Decision, policy: Policy | None = None) -> Decision:
    """Carry out a would_* decision; anything else is returned unchanged."""
    if d.action not in ("would_terminate", "would_cancel"):
        return d
    cancel = d.action == "would_cancel"
    if d.session.is_mysql:
        backups = policy is not None and policy.include_backups
        done = my_kill(conn, d, cancel, backups)
    else:
        done = _pg_kill(conn, d, cancel)
    level = (
        logging.WARNING if done.action in ("terminated", "cancelled", "failed") else logging.INFO
    )
    log.log(
        level,
        "%s %s on %s: %s%s",
        done.action,
        who(done.session),
        done.session.target,
        done.reason,
        f" ({done.error})" if done.error else "",
    )
    return done


def who(s: Session) -> str:
    ident = f"pid {s.pid}" if s.pid is not None else f"thread {s.thread_id}"
    return f"{ident} ({s.user}@{s.application or s.host or '-'})"


def _pg_kill(conn: Connection, d: Decision, cancel: bool) -> Decision:
    s = d.session
    params = {
        "cancel": cancel,
        "pid": s.pid,
        "backend_start": s.backend_start,
        "xact_start": s.xact_start,
        "wait_ms": WAIT_MS,
    }
    try:
        rows = conn.rows(action_sql(conn, "terminate_backend"), params)
    except ProbeError as exc:
        return replace(d, action="failed", error=exc.detail)
    if not rows:
        return replace(d, action="gone", reason=GONE)
    if not rows[0]["signalled"]:
        what = "cancel" if cancel else f"terminate (waited {WAIT_MS} ms for the exit)"
        return replace(d, action="failed", error=f"{what} not confirmed by the server")
    return replace(d, action="cancelled" if cancel else "terminated")


# --- explicit-only actions: prepared transactions and replication slots ------------------


def explicit_actions(conn: Connection, spec: TargetSpec, req: Request) -> list[Decision]:
    """--rollback-prepared / --drop-slot: the only way dbwatch ends these (PostgreSQL)."""
    if conn.engine != "postgresql":
        return []
    out = []
    for kind, names in (
        ("prepared_xact", req.rollback_prepared),
        ("replication_slot", req.drop_slots),
    ):
        for name in names:
            rows = conn.rows(action_sql(conn, "terminate_named"), {"kind": kind, "name": name})
            if not rows:
                s = Session(spec.name, "postgresql", pin=Pin(kind=kind, name=name))
                out.append(Decision(s, "gone", f"no {kind.replace('_', ' ')} named {name!r}"))
                continue
            s = holder_session(rows[0], spec.name)
            d = Decision(s, "would_terminate", f"explicitly requested: {s.statement}")
            out.append(_run_explicit(spec, conn, d) if req.execute else d)
    return out


def _run_explicit(spec: TargetSpec, conn: Connection, d: Decision) -> Decision:
    s = d.session
    try:
        if s.kind == "replication_slot":
            conn.rows("SELECT pg_drop_replication_slot(%(name)s)", {"name": s.name})
        else:  # must run in the prepared transaction's own database; not a bindable statement
            other = open_target(spec, database=s.database)
            try:
                other.execute(f"ROLLBACK PREPARED {quote_literal(s.name or '')}")
            finally:
                other.close()
    except ProbeError as exc:
        return replace(d, action="failed", error=exc.detail)
    log.warning("ran %s on %s", s.statement, spec.name)
    return replace(d, action="terminated")
