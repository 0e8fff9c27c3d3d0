"""Cancel or terminate sessions with identity re-checks at the moment of the kill.

Shared by `dbwatch terminate` (run_target) and the daemon (daemon_terminate). PostgreSQL:
one statement re-checks pid, backend_start and xact_start and signals. MySQL/MariaDB: the
thread and its InnoDB trx are re-read immediately before KILL (mysql.rds_kill* on RDS).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..config import TerminateConfig
from ..errors import ProbeError, TargetError
from ..probes import sql
from ..targets import Connection, TargetSpec, open_target
from .guards import (
    Criteria,
    Decision,
    Eligible,
    Policy,
    Session,
    as_datetime,
    describe,
    eligible,
    intended_action,
    plan,
    protection,
)
from .sessions import holder_session, my_sql, quote_literal, read_sessions

log = logging.getLogger(__name__)
WAIT_MS = 3000  # PG 14+: wait this long for a terminated backend to exit
GONE = "no longer the same session or transaction at the moment of the kill; nothing signalled"
_MY_UNKNOWN_THREAD, _MY_REFUSED = 1094, (1095, 1227)


@dataclass(frozen=True)
class Request:
    """What `dbwatch terminate` asks of one target."""

    criteria: Criteria
    policy: Policy
    limit: int | None = None
    execute: bool = False
    rollback_prepared: tuple[str, ...] = ()
    drop_slots: tuple[str, ...] = ()


def run_target(spec: TargetSpec, req: Request) -> tuple[list[Decision], int]:
    """Plan (and with execute, carry out) one target's actions; returns them and the number
    --limit left out. TargetError propagates: the caller reports the target."""
    conn = open_target(spec)
    try:
        decisions: list[Decision] = []
        left_out = 0
        if req.criteria.given:
            sessions = read_sessions(
                conn, spec.name, holders=req.criteria.holding_xmin, blocking=req.criteria.blocking
            )
            decisions, left_out = plan(sessions, req.criteria, req.policy, req.limit)
            if req.execute:
                decisions = [execute(conn, d) for d in decisions]
        decisions += explicit_actions(conn, spec, req)
        return decisions, left_out
    finally:
        conn.close()


def execute(conn: Connection, d: Decision) -> Decision:
    """Carry out a would_* decision; anything else is returned unchanged."""
    if d.action not in ("would_terminate", "would_cancel"):
        return d
    cancel = d.action == "would_cancel"
    done = _my_kill(conn, d, cancel) if d.session.is_mysql else _pg_kill(conn, d, cancel)
    level = (
        logging.WARNING if done.action in ("terminated", "cancelled", "failed") else logging.INFO
    )
    log.log(
        level,
        "%s %s on %s: %s%s",
        done.action,
        _who(done.session),
        done.session.target,
        done.reason,
        f" ({done.error})" if done.error else "",
    )
    return done


def _who(s: Session) -> str:
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
        rows = conn.rows(sql("postgresql", "terminate_backend", conn.version_num), params)
    except ProbeError as exc:
        return replace(d, action="failed", error=exc.detail)
    if not rows:
        return replace(d, action="gone", reason=GONE)
    if not rows[0]["signalled"]:
        what = "cancel" if cancel else f"terminate (waited {WAIT_MS} ms for the exit)"
        return replace(d, action="failed", error=f"{what} not confirmed by the server")
    return replace(d, action="cancelled" if cancel else "terminated")


def _my_code(detail: str) -> int:
    m = re.match(r"\((\d+)\)", detail)
    return int(m.group(1)) if m else 0


def _my_kill(conn: Connection, d: Decision, cancel: bool) -> Decision:
    s = d.session
    tid = int(s.thread_id or 0)  # an int, bound: never text from the server spliced in
    rows = conn.rows(sql("mysql", my_sql(conn, "terminate_recheck"), 0), {"thread_id": tid})
    if not rows or not same_thread(s, rows[0]):
        return replace(d, action="gone", reason=GONE)
    try:
        conn.execute("KILL QUERY %s" if cancel else "KILL %s", (tid,))
    except ProbeError as exc:
        code = _my_code(exc.detail)
        if code == _MY_UNKNOWN_THREAD:
            return replace(d, action="gone", reason=GONE)
        if code not in _MY_REFUSED or not _rds_kill(conn, tid, cancel):
            return replace(d, action="failed", error=exc.detail)
    return replace(d, action="cancelled" if cancel else "terminated")


def same_thread(s: Session, now: dict[str, Any]) -> bool:
    """Same user and trx, and no statement since the listing: INNODB_TRX is a cache up to
    0.1 s old, so the live PROCESSLIST (QUERY_ID on MariaDB, else TIME) must agree."""
    trx = None if now.get("trx_id") is None else str(now["trx_id"])
    if now.get("user") != s.user or trx != s.trx_id:
        return False
    if s.query_id is not None and now.get("query_id") is not None:
        return int(now["query_id"]) == s.query_id
    if s.command_seconds is None:
        return True
    return (
        now.get("command") == s.command and float(now["command_seconds"] or 0) >= s.command_seconds
    )


def _rds_kill(conn: Connection, tid: int, cancel: bool) -> bool:
    """RDS-style servers refuse KILL of other users' threads; their procedures do it."""
    try:
        names = {r["name"] for r in conn.rows(sql("mysql", "terminate_rds_routines", 0))}
    except ProbeError:
        return False
    proc = "rds_kill_query" if cancel else "rds_kill"
    if proc not in names:
        return False
    try:
        conn.execute(f"CALL mysql.{proc}(%s)", (tid,))
    except ProbeError as exc:
        log.warning("mysql.%s(%s) on %s failed: %s", proc, tid, conn.spec.name, exc.detail)
        return False
    return True


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
            rows = conn.rows(
                sql("postgresql", "terminate_named", conn.version_num), {"kind": kind, "name": name}
            )
            if not rows:
                s = Session(target=spec.name, engine="postgresql", kind=kind, name=name)
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


# --- the daemon -----------------------------------------------------------------------

_announced: dict[tuple[str, str], str] = {}
_announced_lock = threading.Lock()
Notify = Callable[[dict[str, Any]], None]


def daemon_terminate(
    spec: TargetSpec,
    cfg: TerminateConfig,
    firing: list[tuple[Any, float]],
    state: Any,
    notify: Notify,
) -> list[dict[str, Any]]:
    """The daemon's [terminate] action for one target and cycle; returns the new actions.

    Only when cfg.enabled; only findings of cfg.rules past cfg.after; at most
    cfg.max_per_cycle sessions; a dry run unless cfg.dry_run is false. Every action is
    recorded in the state, logged and announced; a would-have is announced once per process.
    """
    if not cfg.enabled:
        return []
    wanted = eligible(firing, cfg, spec.name)
    if not wanted:
        return []
    try:
        conn = open_target(spec)
    except TargetError as exc:
        log.warning("terminate on %s skipped: %s", spec.name, exc.detail)
        return []
    try:
        live = read_sessions(conn, spec.name)
        policy = Policy.from_config(cfg)
        out, acted = [], 0
        for e in wanted:
            d = daemon_decision(e, live, policy, cfg)
            if d.action.startswith("would_"):
                if acted >= cfg.max_per_cycle:
                    continue  # next cycle
                acted += 1
                if not cfg.dry_run:
                    d = execute(conn, d)
            reported = _report(spec, e, d, cfg, state, notify)
            if reported is not None:
                out.append(reported)
        return out
    finally:
        conn.close()


def daemon_decision(
    e: Eligible, live: list[Session], policy: Policy, cfg: TerminateConfig
) -> Decision:
    """Pure: what to do about one eligible finding, given the sessions read just now."""
    f, ident = e.finding, e.identity
    kind = f.evidence.get("kind")
    if kind not in (None, "backend", "session") or not ident.usable:
        stub = Session(
            target=f.target,
            engine="postgresql" if ident.pid else "mysql",
            kind=str(kind or "finding"),
            name=f.subject,
            statement=f.fix,
        )
        return Decision(
            stub,
            "skipped_protected",
            f"{f.rule} names no session dbwatch may end ({f.subject}): {f.fix}",
        )
    s = next((s for s in live if ident.same_session(s)), None)
    if s is None or (ident.xact_known and as_datetime(s.xact_start) != ident.xact_start):
        stub = s or Session(
            target=f.target,
            engine="mysql" if ident.thread_id else "postgresql",
            pid=ident.pid,
            thread_id=ident.thread_id,
            trx_id=ident.trx_id,
            backend_start=ident.backend_start,
        )
        return Decision(stub, "gone", "the session or transaction of the finding has ended")
    why = protection(s, policy)
    if why:
        return Decision(s, "skipped_protected", why)
    if s.age is None or s.age < cfg.after:
        return Decision(s, "gone", "its transaction is now younger than terminate.after")
    return Decision(s, intended_action(s, policy), f"{f.rule} firing: {describe(s)}")


def _report(
    spec: TargetSpec, e: Eligible, d: Decision, cfg: TerminateConfig, state: Any, notify: Notify
) -> dict[str, Any] | None:
    f = e.finding
    key = (spec.name, f.fingerprint)
    with _announced_lock:
        if _announced.get(key) == d.action and d.action not in ("terminated", "cancelled"):
            return None
        _announced[key] = d.action
    doc = d.to_dict() | {
        "rule": f.rule,
        "fingerprint": f.fingerprint,
        "subject": f.subject,
        "severity": f.severity,
        "finding": f.summary,
        "dry_run": cfg.dry_run,
        "summary": f"dbwatch {d.action} {_who(d.session)} on {spec.name} ({f.rule}): {d.reason}",
    }
    if state is not None:
        state.record_action(
            spec.name, f.rule, f.fingerprint, f.subject, d.action, json.dumps(doc, default=str)
        )
    level = logging.WARNING if d.action in ("terminated", "cancelled", "failed") else logging.INFO
    log.log(
        level, "terminate on %s: %s %s (%s): %s", spec.name, d.action, f.subject, f.rule, d.reason
    )
    try:
        notify(doc)
    except Exception:  # an alert receiver must never undo or block an action
        log.exception("announcing the %s of %s on %s failed", d.action, f.subject, spec.name)
    return doc
