"""Live candidates for terminate, read-only: PostgreSQL backends and horizon pins, MySQL/MariaDB
threads with their InnoDB transactions, as guards.Session records.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import replace
from typing import Any

from ..checks.lockgraph import LockGraph
from ..checks.my_locks import graph_of
from ..errors import ProbeError
from ..probes.my_locks import read_lock_waits
from ..snapshot.my import MyThread
from ..snapshot.values import as_row, to_int, to_str
from ..targets import Connection
from ..targets.own import OWN_SESSIONS
from .guards import IDLE_STATES, Session
from .statements import action_sql

log = logging.getLogger(__name__)
SESSION_LIMIT = 5000


def quote_literal(text: str) -> str:
    """A SQL string literal (standard_conforming_strings): for statements shown to people."""
    return "'" + str(text).replace("'", "''") + "'"


def read_sessions(
    conn: Connection, target: str, blocking: bool = False, database: str | None = None
) -> list[Session]:
    """Live candidates. PostgreSQL: only sessions of `database` when one is given (the
    target's scope); MySQL/MariaDB: every thread."""
    if conn.engine == "postgresql":
        return pg_sessions(conn, target, database)
    return my_sessions(conn, target, blocking)


def pg_sessions(conn: Connection, target: str, database: str | None = None) -> list[Session]:
    rows: list[dict[str, Any]] = conn.rows(
        action_sql(conn, "terminate_sessions"),
        {"limit": SESSION_LIMIT, "database": database},
    )
    seen = time.monotonic()
    own = OWN_SESSIONS.ids(conn.server_key)
    roots = LockGraph.from_blocked_by({r["pid"]: r["blocked_by"] for r in rows}).roots()
    return [
        Session(
            target=target,
            engine="postgresql",
            pid=r["pid"],
            backend_start=r["backend_start"],
            xact_start=r["xact_start"],
            user=r["user"],
            application=r["application"],
            host=r["host"],
            database=r["database"],
            state=r["state"],
            backend_type=r["backend_type"],
            age=r["xact_seconds"],
            idle=r["state_seconds"] if str(r["state"] or "").startswith("idle") else None,
            idle_in_transaction=r["state"] in IDLE_STATES,
            query=r["query"],
            superuser=r["superuser"],
            is_self=bool(r["is_self"]) or r["pid"] in own,
            xid_age=None if r["xid_age"] is None else int(r["xid_age"]),
            blocks=roots.get(r["pid"], 0),
            standby=bool(r["standby"]),
            seen_at=seen,
        )
        for r in rows
    ]


def holder_session(h: dict[str, Any], target: str) -> Session:
    kind, name = h["kind"], h["name"]
    statement = None
    if kind == "prepared_xact":
        statement = f"ROLLBACK PREPARED {quote_literal(name)}"
    elif kind == "replication_slot":
        statement = f"SELECT pg_drop_replication_slot({quote_literal(name)})"
    return Session(
        target=target,
        engine="postgresql",
        kind=kind,
        name=name,
        database=h.get("database"),
        user=h.get("user"),
        host=h.get("host"),
        xid_age=None if h.get("xid_age") is None else int(h["xid_age"]),
        age=h.get("age_seconds"),
        statement=statement,
    )


def _optional(conn: Connection, name: str) -> list[dict[str, object]] | None:
    """A query that privileges or a disabled performance_schema may refuse: None then."""
    try:
        return conn.rows(action_sql(conn, name))
    except ProbeError as exc:
        log.debug("%s unavailable on %s: %s", name, conn.spec.name, exc.detail)
        return None


def my_superusers(conn: Connection) -> set[str] | None:
    """User names with SUPER; None when this account cannot see other accounts' grants."""
    rows = _optional(conn, "terminate_superusers")
    if rows is not None:
        return {to_str(as_row(r).get("user")) for r in rows}
    rows = _optional(conn, "terminate_superusers_grantees")
    if not rows:
        return None
    grantees = (to_str(as_row(r).get("grantee")) for r in rows)
    names = {m.group(1) for g in grantees if (m := re.match(r"'([^']*)'@", g))}
    return names or None


def my_sessions(conn: Connection, target: str, blocking: bool = False) -> list[Session]:
    rows = conn.rows(action_sql(conn, "terminate_threads"), {"limit": SESSION_LIMIT})
    threads = [MyThread.from_row(as_row(r)) for r in rows]
    seen = time.monotonic()
    own = OWN_SESSIONS.ids(conn.server_key)
    read = _optional(conn, "terminate_programs")
    programs = {
        to_int(p.get("thread_id")): to_str(p.get("program")) for p in map(as_row, read or [])
    }
    supers = my_superusers(conn)
    roots: dict[int, int] = graph_of(read_lock_waits(conn)).roots() if blocking else {}
    out = [_my_session(t, conn.flavour, target, programs, supers, roots) for t in threads]
    return [
        replace(s, is_self=s.is_self or s.thread_id in own, programs_known=bool(read), seen_at=seen)
        for s in out
    ]


def _my_session(
    t: MyThread,
    flavour: str,
    target: str,
    programs: dict[int, str],
    supers: set[str] | None,
    roots: dict[int, int],
) -> Session:
    tid, trx = t.thread_id, t.trx_id
    if trx is not None:
        age: float | None = float(t.trx_seconds or 0)
    else:  # a statement outside InnoDB is its own transaction
        age = float(t.command_seconds or 0) if t.command == "Query" else None
    return Session(
        target=target,
        engine=flavour,
        thread_id=tid,
        trx_id=trx,
        user=t.user,
        application=programs.get(tid),
        host=t.host,
        database=t.db,
        state=t.trx_state or t.state,
        command=t.command,
        command_seconds=float(t.command_seconds or 0),
        query_id=t.query_id,
        age=age,
        idle=float(t.command_seconds or 0) if t.sleeping else None,
        idle_in_transaction=t.sleeping and trx is not None,
        query=t.query,
        superuser=None if supers is None else t.user in supers,
        is_self=t.is_self,
        blocks=roots.get(tid, 0),
        rows_modified=t.trx_rows_modified,
    )
