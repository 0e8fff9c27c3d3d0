"""MY101: InnoDB lock waits, each with its blocker and the root of its blocking chain."""

from __future__ import annotations

from collections.abc import Iterator

from ..durations import format_duration
from ..findings import Finding, SessionIdentity
from ..snapshot.my import MY_LOCK_WAITS, MyLockWait, MyLockWaits
from . import CheckContext, check, pure
from .lockgraph import my_lock_graph


def _blocker_row(thread: int | None, waits: tuple[MyLockWait, ...]) -> MyLockWait:
    """What the server says of a blocking thread (its first wait row as the blocker)."""
    return next((w for w in waits if w.blocking_thread_id == thread), MyLockWait())


def _root_evidence(root: int, row: MyLockWait, behind: int) -> dict[str, object]:
    idle = row.blocking_command == "Sleep"
    return {
        "root_thread_id": root,
        "root_trx_id": row.blocking_trx_id,
        "root_user": row.blocking_user,
        "root_host": row.blocking_host,
        "root_command": row.blocking_command,
        "root_state": "idle in transaction" if idle else (row.blocking_trx_state or "?"),
        "root_trx_age": format_duration(row.blocking_trx_seconds),
        "root_idle_seconds": row.blocking_command_seconds if idle else None,
        "root_query": row.blocking_query,
        "waiters_behind_root": behind,
    }


def _fix(ev: dict[str, object]) -> str:
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


def _root_identity(ctx: CheckContext, root: int | None, row: MyLockWait) -> SessionIdentity | None:
    """The chain's root: the session a terminate of this finding ends."""
    if root is None:
        return None
    return row.blocker_identity(ctx.snapshot.engine, ctx.snapshot.target, root)


def _schema_of(table: str | None) -> str | None:
    """`app`.`jobs` -> app: the schema of the locked table (evidence.database)."""
    db, dot, _ = (table or "").partition(".")
    return db.strip("`") or None if dot else None


@pure()
@check("my_lock_waits", mysql=["my.lock_waits"])
def my_lock_waits(ctx: CheckContext) -> Iterator[Finding]:
    data = ctx.snapshot.get(MY_LOCK_WAITS) or MyLockWaits()
    graph = my_lock_graph(ctx.snapshot)
    roots = graph.roots()
    seen: set[int | None] = set()
    for w in data.waits:
        thread = w.waiting_thread_id
        if thread in seen:
            continue
        seen.add(thread)
        age = float(w.wait_seconds or 0)
        sev = ctx.grade(age)
        if not sev:
            continue
        root = graph.root_of(thread) if thread is not None else None
        ev: dict[str, object] = {
            "thread_id": thread,
            "trx_id": w.waiting_trx_id,
            "user": w.waiting_user,
            "host": w.waiting_host,
            "age": format_duration(age),
            "age_seconds": age,
            "table": w.locked_table,
            "database": _schema_of(w.locked_table),
            "index": w.locked_index,
            "lock_mode": w.lock_mode,
            "query": w.waiting_query,
            "blocking_thread_id": w.blocking_thread_id,
            "blocking_trx_id": w.blocking_trx_id,
            "blocking_query": w.blocking_query,
            "source": data.source,
        }
        row = _blocker_row(root, data.waits)
        if root is not None:
            ev |= _root_evidence(root, row, roots.get(root, 0))
        yield ctx.finding(
            severity=sev,
            subject=f"thread {thread}",
            evidence=ev,
            fix=_fix(ev),
            identity=[thread, w.waiting_trx_id],
            session=_root_identity(ctx, root, row),
        )
