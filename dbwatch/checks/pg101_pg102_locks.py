"""PG101 (lock-wait chains from pg_blocking_pids, one finding per root blocker) and PG102
(pg_stat_database.deadlocks: the counter in an audit, the increase in the daemon).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ..deadlocks.unshown import evidence as not_shown_evidence
from ..durations import format_duration
from ..findings import Finding
from ..snapshot import Snapshot
from ..snapshot.pg import PgSession, scoped_sessions
from ..snapshot.pg_mvcc import PG_DEADLOCKS, deadlocks_in_scope
from ..snapshot.values import iso
from . import CheckContext, check, pure
from .lockgraph import LockGraph
from .models import pg_scoped_lock_graph
from .series import latest
from .session_advice import pg_session_setting


def _wait(s: PgSession) -> float:
    """How long a blocked session has waited: its current statement's age."""
    return s.query_seconds or s.state_seconds or 0.0


def _root_fix(root: PgSession | None, pid: int) -> str:
    if root is not None and root.idle_in_transaction:
        return (
            f"The root is idle in transaction: SELECT pg_terminate_backend({pid}); and "
            "prevent it: " + pg_session_setting(root, "idle_in_transaction_session_timeout", "5min")
        )
    return (
        f"Look at the root (pid {pid}) in pg_stat_activity; if it is runaway or DDL: "
        f"SELECT pg_cancel_backend({pid}); (pg_terminate_backend if idle). Guard DDL with "
        "SET lock_timeout = '3s'; claim with FOR UPDATE SKIP LOCKED"
    )


def _groups(sessions: Sequence[PgSession], graph: LockGraph[int]) -> dict[int, list[list[int]]]:
    roots: dict[int, list[list[int]]] = {}
    for s in sessions:
        if graph.waiting(s.pid):
            chain = graph.chain(s.pid)
            # a cycle (a deadlock PostgreSQL has not yet broken) has no root: key it once
            root = min(chain) if graph.waiting(chain[-1]) else chain[-1]
            roots.setdefault(root, []).append(chain)
    return roots


def _link(p: int, s: PgSession | None) -> dict[str, object]:
    """One session of a chain, for the evidence."""
    if s is None:
        return {"pid": p, "waiting": None, "state": None, "wait_event": None, "query": None}
    return {
        "pid": p,
        "waiting": format_duration(_wait(s)) if s.blocked_by else None,
        "state": s.state,
        "wait_event": s.wait_event,
        "query": s.query,
    }


def _root_evidence(root: PgSession | None) -> dict[str, object]:
    """The root's identity, so a terminate action never hits a recycled pid."""
    if root is None:
        root = PgSession(pid=0)  # every field None: the root is not in the listing
    return {
        "root_backend_start": iso(root.backend_start),
        "root_xact_start": iso(root.xact_start),
        "root_state": root.state,
        "root_query": root.query,
        "root_xact_age": format_duration(root.xact_seconds),
        "root_user": root.user,
        "root_application": root.application,
    }


def _scoped_sessions(snap: Snapshot) -> tuple[object, ...]:
    """PG101 reads the target's database's sessions and their waits, nothing else."""
    return (scoped_sessions(snap),)


@pure(_scoped_sessions)
@check("pg_blocking", postgresql=["pg.sessions"])
def pg_blocking(ctx: CheckContext) -> Iterator[Finding]:
    graph = pg_scoped_lock_graph(ctx.snapshot)
    if not graph.edges:
        return  # no session of the target's database waits for a lock
    sessions = scoped_sessions(ctx.snapshot)
    by_pid = {s.pid: s for s in sessions}
    for root_pid, chains in _groups(sessions, graph).items():
        waits = sorted(((_wait(by_pid[c[0]]), c) for c in chains), key=lambda w: -w[0])
        longest, chain = waits[0]
        sev = ctx.grade(longest)
        if not sev:
            continue
        root = by_pid.get(root_pid)
        first = by_pid[chain[0]]
        ev: dict[str, object] = {
            "pid": chain[0],
            "user": first.user,
            "application": first.application,
            "database": first.database,
            "age": format_duration(longest),
            "age_seconds": round(longest, 1),
            "blocking_pid": chain[1] if len(chain) > 1 else root_pid,
            "root_pid": root_pid,
            "blocked_count": len(chains),
            **_root_evidence(root),
            "chain": [_link(p, by_pid.get(p)) for p in chain],
            "blocked": [
                {
                    "pid": w[1][0],
                    "waiting": format_duration(w[0]),
                    "waiting_seconds": round(w[0], 1),
                    "blocked_by": w[1][1],
                }
                for w in waits
            ],
        }
        summary = ctx.summary(**ev)
        if len(chains) > 1:
            summary += f" ({len(chains)} sessions wait behind it)"
        yield ctx.finding(
            severity=sev,
            subject=f"pid {root_pid}",
            summary=summary,
            fix=_root_fix(root, root_pid),
            evidence=ev,
            identity=[
                root_pid,
                iso(root.backend_start) if root else None,
                iso(root.xact_start) if root else None,
            ],
            session=None if root is None else root.identity(ctx.snapshot.target),
        )


@check("pg_deadlocks", postgresql=["pg.deadlocks"])
def pg_deadlocks(ctx: CheckContext) -> Iterator[Finding]:
    daemon = ctx.state is not None and hasattr(ctx.state, "history")
    scope = ctx.snapshot.scope
    for d in deadlocks_in_scope(ctx.snapshot.get(PG_DEADLOCKS), scope):
        if scope is not None and d.database != scope:
            continue  # the read covers the server; the target is its own database
        now = d.deadlocks or 0
        since = (
            f"the statistics reset at {d.stats_reset}"
            if d.stats_reset
            else "the statistics were created (never reset)"
        )
        if daemon:
            if now <= 0:
                # no deadlock counted: a count since the last look is 0 whatever that look
                # was (0, or a higher counter reset since): nothing to say, no history read
                continue
            points = latest(ctx, f"pg.deadlocks:{d.database}", 7 * 86400.0)
            if not points:
                continue  # first look: the counter is the baseline
            last = int(points[-1][1])
            count = now - last if now >= last else now  # a reset restarts the counter
            since = "the last look"
        else:
            count = now
        if count <= 0:
            continue
        ev = {
            "database": d.database,
            "count": count,
            "counter": now,
            "since": since,
            "stats_reset": d.stats_reset,
            "one_shot": not daemon,
        }
        # one-shot: the counter (nothing shown in detail); daemon: the running total of the
        # target's deadlocks counted and not recorded, this cycle's included
        ev.update(not_shown_evidence(ctx.state, ctx.snapshot.target, now, count, 0))
        ev["not_shown_database"] = count
        summary = ctx.summary(**ev)
        if not daemon:
            summary += " (cumulative counter: a one-shot audit cannot tell when they happened)"
        summary += (
            f"; {count} not shown in detail: give the target `log_file` (the server log) so the "
            "daemon reads each one, or run `dbwatch deadlocks --log <server log>`"
        )
        yield ctx.finding(
            severity=ctx.rule.severity,
            subject=f"database {d.database}",
            summary=summary,
            evidence=ev,
            identity=[d.database],
        )
