"""What to do about one long or idle transaction (PG001/PG002/MY001/MY002): the cause first.

A transaction that is itself waiting for a lock is not the cause: its fix names the root of
its lock chain (the one lock graph, checks.lockgraph). Otherwise the prevention follows the
session's state (active → statement/transaction timeouts, idle in transaction →
idle_in_transaction_session_timeout), with the real role and database, quoted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..durations import format_duration
from ..snapshot.identity import IDLE_STATES
from ..targets.quoting import pg_ident_text
from .lockgraph import LockGraph

if TYPE_CHECKING:  # each engine's rows are imported where used: not by the other's audit
    from ..snapshot.my import MyLockWait, MyLockWaits, MyThread
    from ..snapshot.pg import PgSession

PG_TRANSACTION_TIMEOUT = 170000  # transaction_timeout exists from PostgreSQL 17


def _quote_literal(text: object) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def pg_interval(seconds: float | None, default: str = "5min") -> str:
    """A setting value people read easily: 300 -> '5min', 90 -> '90s'."""
    if not seconds or seconds <= 0:
        return default
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}min"
    return f"{int(seconds)}s"


def pg_role_setting(user: str | None, database: str | None, setting: str, value: str) -> str:
    """ALTER ROLE "app" IN DATABASE "db" SET …; with the session's real role and database."""
    role = pg_ident_text(user) if user else "<role>"
    where = f" IN DATABASE {pg_ident_text(database)}" if database else ""
    return f"ALTER ROLE {role}{where} SET {setting} = {_quote_literal(value)};"


def pg_session_setting(s: PgSession | None, setting: str, value: str) -> str:
    """pg_role_setting for this session's role and database (placeholders when unknown)."""
    if s is None:
        return pg_role_setting(None, None, setting, value)
    return pg_role_setting(s.user, s.database, setting, value)


def pg_blocked_fix(pid: int, graph: LockGraph[int], by_pid: Mapping[int, PgSession]) -> str | None:
    """For a waiting backend: who blocks it and what ends the chain; None if it is not waiting."""
    if not graph.waiting(pid):
        return None
    blocker = graph.blockers(pid)[0]
    root = graph.root_of(pid)
    if root is None:
        return (
            f"pid {pid} waits for pid {blocker} in a lock cycle (a deadlock the server has not "
            "broken yet): PostgreSQL ends it after deadlock_timeout (PG102); ending pid "
            f"{pid} is not needed."
        )
    r = by_pid.get(root)
    state = r.state if r is not None else None
    user = r.user if r is not None else None
    app = r.application if r is not None else None
    who = f"{user or '?'}@{app or '-'}, {state or '?'}"
    if state in IDLE_STATES:
        end = f"SELECT pg_terminate_backend({root});"
        prevent = pg_session_setting(r, "idle_in_transaction_session_timeout", "5min")
    else:
        end = f"SELECT pg_cancel_backend({root}); (pg_terminate_backend({root}) if it stays)"
        prevent = pg_session_setting(r, "statement_timeout", "5min")
    via = f" (through pid {blocker})" if blocker != root else ""
    return (
        f"pid {pid} is waiting for a lock held by pid {root}{via} ({who}): ending pid {pid} "
        f"frees nothing. End the root: {end} Prevent it: {prevent} and give the waiting role "
        f"a lock_timeout: {pg_session_setting(by_pid.get(pid), 'lock_timeout', '10s')}"
    )


def pg_fix(s: PgSession, version_num: int, idle_after: float | None = None) -> str:
    """End it now, and the server-side guard that matches what the session is doing."""
    pid, state = s.pid, s.state
    if state in IDLE_STATES:
        return (
            f"End it in the application, or: SELECT pg_terminate_backend({pid}); Prevent it: "
            + pg_session_setting(s, "idle_in_transaction_session_timeout", pg_interval(idle_after))
        )
    if state == "active":
        xact = s.xact_seconds or 0.0
        query = s.query_seconds or 0.0
        has_tt = version_num >= PG_TRANSACTION_TIMEOUT
        if query >= 0.9 * xact:  # one long statement is the transaction
            guard = pg_session_setting(s, "statement_timeout", "5min")
            if has_tt:
                guard += " or " + pg_session_setting(s, "transaction_timeout", "30min")
            return (
                f"Cancel the statement: SELECT pg_cancel_backend({pid}); (or "
                f"pg_terminate_backend). Prevent it: {guard}"
            )
        tail = (
            pg_session_setting(s, "transaction_timeout", "30min")
            if has_tt
            else "keep transactions short in the application (transaction_timeout needs "
            "PostgreSQL 17+; statement_timeout does not limit a transaction of short statements)"
        )
        return (
            f"Its transaction ({format_duration(xact)}) spans many statements: end it in the "
            f"application, or SELECT pg_terminate_backend({pid}); Prevent it: {tail}"
        )
    return (
        f"End it in the application, or: SELECT pg_terminate_backend({pid}); "
        f"(state {state or 'unknown'})"
    )


def my_blockers(lock_waits: MyLockWaits | None) -> dict[int | None, MyLockWait]:
    """Per blocking thread of my.lock_waits, what the server says of it."""
    blockers: dict[int | None, MyLockWait] = {}
    for w in lock_waits.waits if lock_waits is not None else ():
        blockers.setdefault(w.blocking_thread_id, w)
    return blockers


def my_blocked(
    t: MyThread, lock_waits: MyLockWaits | None, graph: LockGraph[int]
) -> tuple[dict[str, object], str, str] | None:
    """For a waiting InnoDB transaction: (evidence, summary tail, fix) naming its blocker and
    the root of its chain; None when it is not waiting."""
    thread = t.thread_id
    rows = my_blockers(lock_waits)
    if lock_waits is None or not graph.waiting(thread):
        if (t.trx_state or "").upper() != "LOCK WAIT":
            return None
        return (
            {"waiting_for_lock": True, "blocking_thread_id": None},
            "; it is waiting for a lock (its blocker could not be read)",
            (
                f"Thread {thread} is waiting for a lock: killing it frees nothing. Find the "
                "blocker: SELECT * FROM sys.innodb_lock_waits; (or MY101) and end that one."
            ),
        )
    blocker: int = graph.blockers(thread)[0]
    root: int | None = graph.root_of(thread)
    ev: dict[str, object] = {
        "waiting_for_lock": True,
        "blocking_thread_id": blocker,
        "root_thread_id": root,
        "chain": list(graph.chain(thread)),
    }
    if root is None:
        return (
            ev,
            f"; it waits for thread {blocker} in a lock cycle",
            "A lock cycle: InnoDB's deadlock detector rolls one back (MY102); nothing to kill.",
        )
    r = rows.get(root)
    if r is None:  # the root's row was not read: what is known of it is nothing
        from ..snapshot.my import MyLockWait

        r = MyLockWait()
    root_trx_age = format_duration(r.blocking_trx_seconds)
    ev |= {
        "root_trx_id": r.blocking_trx_id,
        "root_user": r.blocking_user,
        "root_host": r.blocking_host,
        "root_command": r.blocking_command,
        "root_trx_age": root_trx_age,
        "root_query": r.blocking_query,
    }
    idle = " idle (Sleep)" if r.blocking_command == "Sleep" else ""
    who = f"thread {root} ({r.blocking_user or '?'}@{r.blocking_host or '?'}{idle})"
    via = f" through thread {blocker}" if blocker != root else ""
    return (
        ev,
        f"; it is blocked by {who}{via}",
        (
            f"Thread {thread} waits for a lock held by {who}{via}: killing {thread} frees "
            f"nothing. End the blocker: KILL {root}; (rolls back its {root_trx_age} old "
            "transaction)"
        ),
    )


def my_fix(t: MyThread, flavour: str) -> str:
    """KILL it, and the guard that matches what it is doing."""
    thread, who = t.thread_id, f"{t.user or '?'}@{t.host or '?'}"
    if t.sleeping:
        prevent = (
            "SET GLOBAL idle_transaction_timeout = 300; (and under [mariadb] in my.cnf)"
            if flavour == "mariadb"
            else "MySQL has no idle-transaction timeout: fix the code path that leaves it open "
            "and keep wait_timeout modest for this user"
        )
        return (
            f"Thread {thread} ({who}) sleeps inside its transaction: commit or roll back in the "
            f"application, or KILL {thread}; Prevent it: {prevent}"
        )
    prevent = (
        "SET SESSION max_statement_time = 300 in the application's connection (MariaDB)"
        if flavour == "mariadb"
        else "max_execution_time (SELECT only) in the application's connection; keep "
        "transactions short"
    )
    return (
        f"Commit or roll back in the application ({who}), or KILL {thread}; (the transaction is "
        f"rolled back). Prevent it: {prevent}."
    )
