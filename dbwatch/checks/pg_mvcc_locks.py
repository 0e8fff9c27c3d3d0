"""PG101 (lock-wait chains from pg_blocking_pids, one finding per root blocker) and PG102
(pg_stat_database.deadlocks: the counter in an audit, the increase in the daemon).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..durations import format_duration
from ..findings import Finding, SessionIdentity
from ..snapshot.pg_mvcc import PG_DEADLOCKS
from . import CheckContext, check
from .lockgraph import LockGraph
from .pg_horizon import IDLE
from .pg_mvcc import history
from .session_advice import pg_role_setting


def _wait(s: dict[str, Any]) -> float:
    """How long a blocked session has waited: its current statement's age."""
    return float(s.get("query_seconds") or s.get("state_seconds") or 0.0)


def graph_of(sessions: list[dict[str, Any]]) -> LockGraph:
    """The lock graph of pg.sessions (pg_blocking_pids of each waiting backend)."""
    return LockGraph.from_blocked_by({s["pid"]: s.get("blocked_by") for s in sessions})


def chain_to_root(pid: int, by_pid: dict[int, dict[str, Any]]) -> list[int]:
    """pid, its first blocker, that one's first blocker … up to a session not waiting."""
    return list(graph_of(list(by_pid.values())).chain(pid))


def _root_fix(root: dict[str, Any] | None, pid: int) -> str:
    if root is not None and root.get("state") in IDLE:
        return (
            f"The root is idle in transaction: SELECT pg_terminate_backend({pid}); and "
            "prevent it: " + pg_role_setting(root, "idle_in_transaction_session_timeout", "5min")
        )
    return (
        f"Look at the root (pid {pid}) in pg_stat_activity; if it is runaway or DDL: "
        f"SELECT pg_cancel_backend({pid}); (pg_terminate_backend if idle). Guard DDL with "
        "SET lock_timeout = '3s'; claim with FOR UPDATE SKIP LOCKED"
    )


def _groups(sessions: list[dict[str, Any]]) -> dict[int, list[list[int]]]:
    graph = graph_of(sessions)
    roots: dict[int, list[list[int]]] = {}
    for s in sessions:
        if graph.waiting(s["pid"]):
            chain = graph.chain(s["pid"])
            # a cycle (a deadlock PostgreSQL has not yet broken) has no root: key it once
            root = min(chain) if graph.waiting(chain[-1]) else chain[-1]
            roots.setdefault(root, []).append(chain)
    return roots


@check("pg_blocking", postgresql=["pg.sessions"])
def pg_blocking(ctx: CheckContext) -> Iterator[Finding]:
    sessions = ctx.snapshot.section("pg.sessions")
    by_pid = {s["pid"]: s for s in sessions}
    for root_pid, chains in _groups(sessions).items():
        waits = sorted(((_wait(by_pid[c[0]]), c) for c in chains), key=lambda w: -w[0])
        longest, chain = waits[0]
        sev = ctx.grade(longest)
        if not sev:
            continue
        root = by_pid.get(root_pid)
        first = by_pid[chain[0]]
        ev = {
            "pid": chain[0],
            "user": first.get("user"),
            "application": first.get("application"),
            "database": first.get("database"),
            "age": format_duration(longest),
            "age_seconds": round(longest, 1),
            "blocking_pid": chain[1] if len(chain) > 1 else root_pid,
            "root_pid": root_pid,
            "blocked_count": len(chains),
            # the root's identity, so a terminate action never hits a recycled pid
            "root_backend_start": (root or {}).get("backend_start"),
            "root_xact_start": (root or {}).get("xact_start"),
            "root_state": (root or {}).get("state"),
            "root_query": (root or {}).get("query"),
            "root_xact_age": format_duration((root or {}).get("xact_seconds")),
            "root_user": (root or {}).get("user"),
            "root_application": (root or {}).get("application"),
            "chain": [
                {
                    "pid": p,
                    "waiting": format_duration(_wait(by_pid[p]))
                    if by_pid.get(p, {}).get("blocked_by")
                    else None,
                    "state": by_pid.get(p, {}).get("state"),
                    "wait_event": by_pid.get(p, {}).get("wait_event"),
                    "query": by_pid.get(p, {}).get("query"),
                }
                for p in chain
            ],
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
            identity=[root_pid, (root or {}).get("backend_start"), (root or {}).get("xact_start")],
            session=None if root is None else SessionIdentity.pg(ctx.snapshot.target, root),
        )


@check("pg_deadlocks", postgresql=["pg.deadlocks"])
def pg_deadlocks(ctx: CheckContext) -> Iterator[Finding]:
    daemon = ctx.state is not None and hasattr(ctx.state, "history")
    for d in ctx.snapshot.get(PG_DEADLOCKS) or ():
        now = d.deadlocks or 0
        since = (
            f"the statistics reset at {d.stats_reset}"
            if d.stats_reset
            else "the statistics were created (never reset)"
        )
        if daemon:
            points = history(ctx, f"pg.deadlocks:{d.database}", 7 * 86400.0)
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
        ev["not_shown"] = count
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
