"""Live candidates for terminate, read-only: PostgreSQL backends and horizon pins, MySQL/MariaDB
threads with their InnoDB transactions, as guards.Session candidates (the row itself, with
what the listing adds).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..checks.lockgraph import LockGraph, my_graph_of, pg_graph_of
from ..errors import ProbeError
from ..probes.my_locks import read_lock_waits
from ..probes.postgresql import session_rows
from ..snapshot.my import MyThread
from ..snapshot.pg import PgSession
from ..snapshot.values import as_row, opt_float, opt_int, opt_str, to_int, to_str
from ..targets import Connection
from ..targets.own import OWN_SESSIONS
from .guards import Pin, Session
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
    graph: LockGraph[int] | None = None,
) -> list[Session]:
    """The pg.sessions rows (a live read, or the daemon's cycle snapshot) as terminate's
    candidates: chain roots from the one lock graph (over the whole listing), own sessions
    by connection id, only `database`'s rows when one is given. `graph`: the snapshot's
    (checks.models.pg_lock_graph) when the rows are its pg.sessions."""
    roots = (graph if graph is not None else pg_graph_of(rows)).roots()
    at = time.monotonic() if seen is None else seen
    return [
        pg_session(r, target, r.pid in own, roots.get(r.pid, 0), at)
        for r in rows
        if database is None or r.database == database
    ]


def pg_session(r: PgSession, target: str, own: bool, blocks: int, seen: float) -> Session:
    """One pg.sessions row as a terminate candidate: the row itself, with what the listing
    adds (own connection, chain root, when read). Its identity is the row's own."""
    return Session(target=target, engine="postgresql", row=r, own=own, blocks=blocks, seen_at=seen)


def holder_session(row: Mapping[str, object], target: str) -> Session:
    """A prepared transaction or replication slot named on the command line (terminate_named)."""
    h = as_row(row)
    kind, name = to_str(h.get("kind")), to_str(h.get("name"))
    statement = None
    if kind == "prepared_xact":
        statement = f"ROLLBACK PREPARED {quote_literal(name)}"
    elif kind == "replication_slot":
        statement = f"SELECT pg_drop_replication_slot({quote_literal(name)})"
    pin = Pin(
        kind=kind,
        name=name,
        statement=statement,
        database=opt_str(h.get("database")),
        user=opt_str(h.get("user")),
        host=opt_str(h.get("host")),
        xid_age=opt_int(h.get("xid_age")),
        age=opt_float(h.get("age_seconds")),
    )
    return Session(target=target, engine="postgresql", pin=pin)


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
    """Every thread (terminate_threads.sql) as a MyThread, with the client program names
    (performance_schema) and SUPER (the grants) that the guards also read."""
    rows = conn.rows(action_sql(conn, "terminate_threads"), {"limit": SESSION_LIMIT})
    threads = [MyThread.from_row(as_row(r)) for r in rows]
    seen = time.monotonic()
    own = OWN_SESSIONS.ids(conn.server_key)
    read = _optional(conn, "terminate_programs")
    programs = {
        to_int(p.get("thread_id")): to_str(p.get("program")) for p in map(as_row, read or [])
    }
    supers = my_superusers(conn)
    roots: dict[int, int] = my_graph_of(read_lock_waits(conn)).roots() if blocking else {}
    return [
        Session(
            target=target,
            engine=conn.flavour,
            row=_with_account(t, programs, supers),
            own=t.thread_id in own,
            blocks=roots.get(t.thread_id, 0),
            programs_known=bool(read),
            seen_at=seen,
        )
        for t in threads
    ]


def _with_account(t: MyThread, programs: dict[int, str], supers: set[str] | None) -> MyThread:
    """The thread with its client's program name and whether its user has SUPER."""
    superuser = None if supers is None else t.user in supers
    return replace(t, program=programs.get(t.thread_id), superuser=superuser)
