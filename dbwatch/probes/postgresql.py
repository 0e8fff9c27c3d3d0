"""PostgreSQL probes: sessions, settings, queue-table indexes."""

from __future__ import annotations

from collections.abc import Iterable

from ..snapshot import CoverageGap
from ..snapshot.pg import PgSession
from ..snapshot.queues import QueueIndex
from ..snapshot.settings import PgPrivileges
from ..snapshot.values import as_row
from ..targets import Connection
from ..targets.own import OWN_SESSIONS
from .grants import MONITOR_GRANT
from .registry import probe
from .results import Covered, PartialResult, jsonable
from .share import read_this_pass
from .sqlfiles import sql

SESSION_LIMIT = 5000
SAFETY_SETTINGS = [
    "idle_in_transaction_session_timeout",
    "statement_timeout",
    "lock_timeout",
    "transaction_timeout",
    "idle_session_timeout",
    "log_lock_waits",
    "deadlock_timeout",
    "hot_standby_feedback",
    "max_prepared_transactions",
]


def session_rows(
    conn: Connection, limit: int = SESSION_LIMIT, own: Iterable[int] = ()
) -> tuple[PgSession, ...]:
    """Every backend of the server (sessions.sql), typed: the one pg_stat_activity read that
    the pg.sessions probe and `dbwatch terminate` share. `own`: dbwatch's other sessions to
    leave out (the daemon's kept sessions are most of a large fleet's server)."""
    params = {"limit": limit, "own": sorted(own)}
    rows = conn.rows(sql("postgresql", "sessions", conn.version), params)
    return tuple(PgSession.from_row(as_row(r)) for r in rows)


@probe("pg.sessions", "postgresql", grant=MONITOR_GRANT, server_wide=True)
def sessions(conn: Connection) -> object:
    """Cluster-wide (whatever database the target names): run once per server and user by
    the daemon; each target's checks keep the rows of their own database (snapshot.scope)."""
    rows = session_rows(conn, SESSION_LIMIT, OWN_SESSIONS.ids(conn.server_key))
    data: object = rows
    hidden = sum(1 for r in rows if r.query == "<insufficient privilege>")
    if not _sees_all_sessions(conn):
        data = PartialResult(
            rows,
            "this role sees only its own sessions: other users' "
            "transactions, queries and horizons are invisible",
            MONITOR_GRANT,
        )
    elif hidden:
        data = PartialResult(
            rows,
            f"{hidden} sessions of other users are hidden "
            "(query and timings need pg_monitor or pg_read_all_stats)",
            MONITOR_GRANT,
        )
    if len(rows) < SESSION_LIMIT:
        return data
    gap = CoverageGap(
        "session_cap",
        "pg.sessions",
        f"read the first {SESSION_LIMIT} backends (open transactions first, oldest first); "
        "the server has more and those were not examined",
    )
    return Covered(data, (gap,))


def _sees_all_sessions(conn: Connection) -> bool:
    """Superuser or pg_read_all_stats (which pg_monitor includes): else other sessions are
    shown with NULL state, timings and xids — a silent OK unless we say so. pg.privileges,
    read first in every pass, says it (the privileges PostgreSQL checks: inherited ones); the
    round trip is made only when it was not read."""
    privileges = read_this_pass("pg.privileges")
    if isinstance(privileges, PgPrivileges):
        return privileges.sees_all_sessions
    row = conn.rows(sql("postgresql", "visibility", conn.version))
    return bool(row and row[0].get("sees_all"))


@probe("pg.settings", "postgresql", ttl=60.0)
def settings(conn: Connection) -> list[dict[str, object]]:
    return [
        jsonable(r)
        for r in conn.rows(sql("postgresql", "settings", conn.version), {"names": SAFETY_SETTINGS})
    ]


@probe("pg.queue_indexes", "postgresql", ttl=300.0)
def queue_indexes(conn: Connection) -> tuple[QueueIndex, ...]:
    return tuple(
        QueueIndex.from_row(r) for r in conn.rows(sql("postgresql", "queue_indexes", conn.version))
    )
