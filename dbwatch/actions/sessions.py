"""Live candidates for terminate, read-only: PostgreSQL backends and horizon pins, MySQL/MariaDB
threads with their InnoDB transactions, as guards.Session records.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..checks.lockgraph import LockGraph
from ..errors import ProbeError
from ..findings import as_datetime
from ..probes.my_locks import lock_waits
from ..probes.postgresql import session_rows
from ..snapshot.pg import PgSession
from ..snapshot.values import as_row, opt_float, opt_int, opt_str, to_str
from ..targets import Connection
from ..targets.own import OWN_SESSIONS
from .guards import Session
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
    """Every backend through the probes' sessions.sql (the same read and row type as the
    pg.sessions section); only `database`'s when one is given."""
    rows = session_rows(conn, SESSION_LIMIT)
    return candidates(rows, target, OWN_SESSIONS.ids(conn.server_key), database)


def candidates(
    rows: Sequence[PgSession],
    target: str,
    own: frozenset[int] = frozenset(),
    database: str | None = None,
    seen: float | None = None,
) -> list[Session]:
    """The pg.sessions rows (a live read, or the daemon's cycle snapshot) as terminate's
    candidates: chain roots from the one lock graph (over the whole listing), own sessions
    by connection id, only `database`'s rows when one is given."""
    roots = LockGraph.from_blocked_by({r.pid: r.blocked_by for r in rows}).roots()
    at = time.monotonic() if seen is None else seen
    return [
        pg_session(r, target, r.pid in own, roots.get(r.pid, 0), at)
        for r in rows
        if database is None or r.database == database
    ]


def pg_session(r: PgSession, target: str, own: bool, blocks: int, seen: float) -> Session:
    """One pg.sessions row as a terminate candidate (the one place the two shapes meet)."""
    return Session(
        target=target,
        engine="postgresql",
        pid=r.pid,
        backend_start=as_datetime(r.backend_start),
        xact_start=as_datetime(r.xact_start),
        user=r.user,
        application=r.application,
        host=r.host,
        database=r.database,
        state=r.state,
        backend_type=r.backend_type,
        age=r.xact_seconds,
        idle=r.state_seconds if (r.state or "").startswith("idle") else None,
        idle_in_transaction=r.idle_in_transaction,
        query=r.query,
        superuser=r.superuser,
        is_self=r.is_self or own,
        xid_age=r.horizon_age,
        blocks=blocks,
        standby=r.standby,
        seen_at=seen,
    )


def holder_session(row: Mapping[str, object], target: str) -> Session:
    """A prepared transaction or replication slot named on the command line (terminate_named)."""
    h = as_row(row)
    kind, name = to_str(h.get("kind")), to_str(h.get("name"))
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
        database=opt_str(h.get("database")),
        user=opt_str(h.get("user")),
        host=opt_str(h.get("host")),
        xid_age=opt_int(h.get("xid_age")),
        age=opt_float(h.get("age_seconds")),
        statement=statement,
    )


def _optional(conn: Connection, name: str) -> list[dict[str, Any]] | None:
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
        return {str(r["user"]) for r in rows}
    rows = _optional(conn, "terminate_superusers_grantees")
    if not rows:
        return None
    names = {m.group(1) for r in rows if (m := re.match(r"'([^']*)'@", str(r["grantee"])))}
    return names or None


def my_sessions(conn: Connection, target: str, blocking: bool = False) -> list[Session]:
    rows = conn.rows(action_sql(conn, "terminate_threads"), {"limit": SESSION_LIMIT})
    seen = time.monotonic()
    own = OWN_SESSIONS.ids(conn.server_key)
    read = _optional(conn, "terminate_programs")
    programs = {int(r["thread_id"]): str(r["program"]) for r in read or []}
    supers = my_superusers(conn)
    roots: dict[Any, int] = {}
    if blocking:
        waits = lock_waits(conn)["waits"]
        graph = LockGraph.from_pairs(
            (w["waiting_thread_id"], w["blocking_thread_id"]) for w in waits
        )
        roots = graph.roots()
    out = [_my_session(r, conn.flavour, target, programs, supers, roots) for r in rows]
    return [
        replace(s, is_self=s.is_self or s.thread_id in own, programs_known=bool(read), seen_at=seen)
        for s in out
    ]


def _my_session(
    r: dict[str, Any],
    flavour: str,
    target: str,
    programs: dict[int, str],
    supers: set[str] | None,
    roots: dict[Any, int],
) -> Session:
    tid, trx, command = int(r["thread_id"]), r.get("trx_id"), r.get("command")
    if trx is not None:
        age: float | None = float(r["trx_seconds"] or 0)
    else:  # a statement outside InnoDB is its own transaction
        age = float(r["command_seconds"] or 0) if command == "Query" else None
    sleeping = command == "Sleep"
    return Session(
        target=target,
        engine=flavour,
        thread_id=tid,
        trx_id=None if trx is None else str(trx),
        user=r.get("user"),
        application=programs.get(tid),
        host=r.get("host"),
        database=r.get("db"),
        state=r.get("trx_state") or r.get("state"),
        command=command,
        command_seconds=float(r["command_seconds"] or 0),
        query_id=None if r.get("query_id") is None else int(r["query_id"]),
        age=age,
        idle=float(r["command_seconds"] or 0) if sleeping else None,
        idle_in_transaction=sleeping and trx is not None,
        query=r.get("trx_query") or r.get("info"),
        superuser=None if supers is None else r.get("user") in supers,
        is_self=bool(r.get("is_self")),
        blocks=roots.get(tid, 0),
        rows_modified=None if r.get("rows_modified") is None else int(r["rows_modified"]),
    )
