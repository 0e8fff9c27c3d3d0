"""PG001/MY001 long transactions and PG002/MY002 idle sessions holding a transaction open."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ..durations import format_duration, plural
from ..findings import Finding, SessionIdentity
from ..snapshot import Snapshot
from ..snapshot.identity import IDLE_STATES
from ..snapshot.values import iso
from . import CheckContext, also_reads, check, pure
from .lockgraph import my_lock_graph
from .session_advice import my_blocked, my_fix, pg_blocked_fix, pg_fix

if TYPE_CHECKING:  # each engine's rows are imported where it is read (startup cost)
    from ..snapshot.my import MyThread
    from ..snapshot.pg import PgSession


def _ignored(ctx: CheckContext, user: object, app: object) -> bool:
    users = ctx.strings("ignore_users")
    apps = ctx.strings("ignore_applications") if "ignore_applications" in ctx.params else []
    return (user in users) or any(re.fullmatch(a, str(app or "")) for a in apps)


def _pg_evidence(s: PgSession, age: float) -> dict[str, object]:
    return {
        "pid": s.pid,
        "user": s.user,
        "application": s.application or "",
        "client_addr": s.client_addr,
        "database": s.database,
        "state": s.state,
        "age": format_duration(age),
        "age_seconds": round(age, 1),
        "xact_start": iso(s.xact_start),
        "backend_start": iso(s.backend_start),
        "backend_xid": s.backend_xid,
        "backend_xmin": s.backend_xmin,
        "wait_event": s.wait_event,
        "query": s.query,
    }


def _my_evidence(t: MyThread, age: float) -> dict[str, object]:
    return {
        "thread_id": t.thread_id,
        "trx_id": str(t.trx_id),
        "user": t.user,
        "host": t.host,
        "db": t.db,
        "database": t.db,  # the thread's default schema (SPEC: evidence.database)
        "command": t.command,
        "age": format_duration(age),
        "age_seconds": age,
        "idle_seconds": t.command_seconds,
        "rows_locked": t.trx_rows_locked,
        "rows_modified": t.trx_rows_modified,
        "isolation": t.trx_isolation_level,
        "query": t.query,
        # the user is not an application: left empty until the server names one
        # (program_name / connect attributes), never invented from the account
        "application": "",
    }


def _waiting_or(ev: dict[str, object], ident: SessionIdentity) -> SessionIdentity | None:
    """The session terminate may end: none for a transaction waiting for a lock (its fix
    names the root of the chain; ending the waiter frees nothing)."""
    return None if ev.get("waiting_for_lock") else ident


def _my_identity(ctx: CheckContext, t: MyThread) -> SessionIdentity:
    return t.identity(ctx.snapshot.engine, ctx.snapshot.target)


def _pg_sessions(ctx: CheckContext) -> tuple[PgSession, ...]:
    """The scoped database's sessions (the section is cluster-wide)."""
    return _pg_scoped(ctx.snapshot)


def _pg_advice(ctx: CheckContext, s: PgSession, ev: dict[str, object]) -> tuple[str, str | None]:
    """(fix, summary tail): the root of its lock chain when it waits, else by its state."""
    from .models import pg_scoped_lock_graph  # the PostgreSQL models: not for a MySQL audit

    sessions = _pg_sessions(ctx)
    by_pid = {r.pid: r for r in sessions}
    graph = pg_scoped_lock_graph(ctx.snapshot)
    blocked = pg_blocked_fix(s.pid, graph, by_pid)
    if blocked is None:
        return pg_fix(s, ctx.snapshot.version_num), None
    root = graph.root_of(s.pid)
    ev |= {
        "waiting_for_lock": True,
        "blocked_by": list(graph.blockers(s.pid)),
        "root_pid": root,
        "chain": graph.chain(s.pid),
    }
    return blocked, (f"; it is waiting for a lock held by pid {root}" if root is not None else None)


def _my_trx(ctx: CheckContext) -> tuple[MyThread, ...]:
    # imported here, not above: a PostgreSQL audit never imports the MySQL rows (startup cost)
    from ..snapshot.my import MY_TRX

    return ctx.snapshot.get(MY_TRX) or ()


def _my_advice(ctx: CheckContext, t: MyThread, ev: dict[str, object]) -> tuple[str, str | None]:
    from ..snapshot.my import MY_LOCK_WAITS

    blocked = my_blocked(t, ctx.snapshot.get(MY_LOCK_WAITS), my_lock_graph(ctx.snapshot))
    if blocked is None:
        return my_fix(t, ctx.snapshot.engine), None
    extra, tail, fix = blocked
    ev |= extra
    return fix, tail


def _session_inputs(snap: Snapshot) -> tuple[object, ...]:
    """What PG001/PG002 (and PG101) read: PostgreSQL, the target's database's sessions alone
    (their lock graph is theirs: `pg_scoped_lock_graph`); MySQL/MariaDB, the sections."""
    if snap.engine == "postgresql":
        # an idle database has none: the empty tuple, the same object whatever the read
        return (_pg_scoped(snap),)
    return (snap.sections.get("my.trx"), snap.sections.get("my.lock_waits"))


# the PostgreSQL rows' scoped_sessions (once per snapshot), imported on the first PostgreSQL
# snapshot (an import statement per call cost ~10 k instructions twice an idle cycle)
_PG_SCOPED: list[Callable[[Snapshot], tuple[PgSession, ...]]] = []


def _pg_scoped(snap: Snapshot) -> tuple[PgSession, ...]:
    if not _PG_SCOPED:
        from ..snapshot.pg import scoped_sessions

        _PG_SCOPED.append(scoped_sessions)
    return _PG_SCOPED[0](snap)


@pure(_session_inputs)
@also_reads(mysql=["my.lock_waits"])
@check("long_transaction", postgresql=["pg.sessions"], mysql=["my.trx"])
def long_transaction(ctx: CheckContext) -> Iterator[Finding]:
    if ctx.snapshot.engine == "postgresql":
        for s in _pg_sessions(ctx):
            age = s.xact_seconds
            if not s.client or age is None:
                continue
            sev = ctx.grade(age)
            if sev and not _ignored(ctx, s.user, s.application):
                ev = _pg_evidence(s, age)
                fix, tail = _pg_advice(ctx, s, ev)
                yield ctx.finding(
                    severity=sev,
                    subject=f"pid {s.pid}",
                    summary=ctx.summary(**ev) + (tail or ""),
                    evidence=ev,
                    fix=fix,
                    identity=[s.pid, iso(s.backend_start), iso(s.xact_start)],
                    session=_waiting_or(ev, s.identity(ctx.snapshot.target)),
                )
        return
    for t in _my_trx(ctx):
        age = float(t.trx_seconds or 0)
        sev = ctx.grade(age)
        if sev and not _ignored(ctx, t.user, None):
            ev = _my_evidence(t, age)
            yield _my_finding(
                ctx,
                t,
                sev,
                ev,
                ctx.summary(**ev)
                + f" ({plural(t.trx_rows_locked or 0, 'row')} locked, {ev['rows_modified']} modified)",
            )


@pure(_session_inputs)
@also_reads(mysql=["my.lock_waits"])
@check("idle_in_transaction", postgresql=["pg.sessions"], mysql=["my.trx"])
def idle_in_transaction(ctx: CheckContext) -> Iterator[Finding]:
    if ctx.snapshot.engine == "postgresql":
        for s in _pg_sessions(ctx):
            if s.state not in IDLE_STATES or s.state_seconds is None:
                continue
            idle = s.state_seconds
            sev = ctx.grade(idle)
            if sev and not _ignored(ctx, s.user, s.application):
                ev = _pg_evidence(s, idle)
                ev["transaction_age"] = format_duration(s.xact_seconds)
                yield ctx.finding(
                    severity=sev,
                    subject=f"pid {s.pid}",
                    evidence=ev,
                    fix=pg_fix(s, ctx.snapshot.version_num),
                    identity=[s.pid, iso(s.backend_start), iso(s.xact_start)],
                    session=_waiting_or(ev, s.identity(ctx.snapshot.target)),
                )
        return
    for t in _my_trx(ctx):
        if not t.sleeping:
            continue
        idle = float(t.command_seconds or 0)
        sev = ctx.grade(idle)
        if sev and not _ignored(ctx, t.user, None):
            ev = _my_evidence(t, float(t.trx_seconds or 0))
            ev["idle"] = format_duration(idle)
            yield _my_finding(
                ctx,
                t,
                sev,
                ev,
                ctx.summary(**ev) + f" ({plural(t.trx_rows_locked or 0, 'row')} locked)",
            )


def _my_finding(
    ctx: CheckContext, t: MyThread, sev: str, ev: dict[str, object], head: str
) -> Finding:
    """MY001/MY002: the summary head plus the blocker's tail, the fix, the thread identity."""
    fix, tail = _my_advice(ctx, t, ev)
    return ctx.finding(
        severity=sev,
        subject=f"thread {t.thread_id}",
        summary=head + (tail or ""),
        evidence=ev,
        fix=fix,
        identity=[t.thread_id, str(t.trx_id)],
        session=_waiting_or(ev, _my_identity(ctx, t)),
    )
