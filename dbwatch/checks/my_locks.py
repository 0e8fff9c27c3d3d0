"""MY101: InnoDB lock waits, each with its blocker and the root of its blocking chain."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..durations import format_duration
from ..findings import Finding, SessionIdentity
from . import CheckContext, check
from .lockgraph import LockGraph


def graph_of(data: dict[str, Any] | None) -> LockGraph[Any]:
    """The lock graph of a my.lock_waits section (thread ids)."""
    waits = (data or {}).get("waits") or []
    return LockGraph.from_pairs(
        (w.get("waiting_thread_id"), w.get("blocking_thread_id")) for w in waits
    )


def _root_evidence(root: Any, waits: list[dict[str, Any]], behind: int) -> dict[str, Any]:
    row = next((w for w in waits if w.get("blocking_thread_id") == root), {})
    idle = row.get("blocking_command") == "Sleep"
    return {
        "root_thread_id": root,
        "root_trx_id": row.get("blocking_trx_id"),
        "root_user": row.get("blocking_user"),
        "root_host": row.get("blocking_host"),
        "root_command": row.get("blocking_command"),
        "root_state": "idle in transaction" if idle else (row.get("blocking_trx_state") or "?"),
        "root_trx_age": format_duration(row.get("blocking_trx_seconds")),
        "root_idle_seconds": row.get("blocking_command_seconds") if idle else None,
        "root_query": row.get("blocking_query"),
        "waiters_behind_root": behind,
    }


def _fix(ev: dict[str, Any]) -> str:
    root = ev.get("root_thread_id")
    if root is None:
        return "A cycle with no root: InnoDB's deadlock detector resolves it (MY102)."
    end = (
        f"KILL {root}; (root thread {root}, {ev['root_state']}, transaction "
        f"{ev['root_trx_age']} old) "
    )
    return (
        end + "ends the chain; for queue claims use FOR UPDATE SKIP LOCKED, keep "
        "transactions short and innodb_lock_wait_timeout modest."
    )


def _root_identity(ctx: CheckContext, ev: dict[str, Any]) -> SessionIdentity | None:
    """The chain's root: the session a terminate of this finding ends."""
    if ev.get("root_thread_id") is None or ev.get("root_trx_id") is None:
        return None
    snap = ctx.snapshot
    return SessionIdentity.my(snap.engine, snap.target, ev["root_thread_id"], ev["root_trx_id"])


def _schema_of(table: Any) -> str | None:
    """`app`.`jobs` -> app: the schema of the locked table (evidence.database)."""
    db, dot, _ = str(table or "").partition(".")
    return db.strip("`") or None if dot else None


@check("my_lock_waits", mysql=["my.lock_waits"])
def my_lock_waits(ctx: CheckContext) -> Iterator[Finding]:
    data = ctx.snapshot.section("my.lock_waits") or {}
    waits: list[dict[str, Any]] = list(data.get("waits") or [])
    graph = graph_of(data)
    roots = graph.roots()
    seen: set[Any] = set()
    for w in waits:
        thread = w.get("waiting_thread_id")
        if thread in seen:
            continue
        seen.add(thread)
        age = float(w.get("wait_seconds") or 0)
        sev = ctx.grade(age)
        if not sev:
            continue
        root = graph.root_of(thread)
        ev: dict[str, Any] = {
            "thread_id": thread,
            "trx_id": w.get("waiting_trx_id"),
            "user": w.get("waiting_user"),
            "host": w.get("waiting_host"),
            "age": format_duration(age),
            "age_seconds": age,
            "table": w.get("locked_table"),
            "database": _schema_of(w.get("locked_table")),
            "index": w.get("locked_index"),
            "lock_mode": w.get("lock_mode"),
            "query": w.get("waiting_query"),
            "blocking_thread_id": w.get("blocking_thread_id"),
            "blocking_trx_id": w.get("blocking_trx_id"),
            "blocking_query": w.get("blocking_query"),
            "source": data.get("source"),
        }
        if root is not None:
            ev |= _root_evidence(root, waits, roots.get(root, 0))
        yield ctx.finding(
            severity=sev,
            subject=f"thread {thread}",
            evidence=ev,
            fix=_fix(ev),
            identity=[thread, w.get("waiting_trx_id")],
            session=_root_identity(ctx, ev),
        )
