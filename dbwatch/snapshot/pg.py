"""Typed rows of the pg snapshot sections (see sections.py)."""

from __future__ import annotations

from dataclasses import dataclass

from .sections import rows_of, section
from .values import Row, int_list, opt_bool, opt_float, opt_int, opt_str, to_bool, to_int


@dataclass(frozen=True)
class PgSession:
    """One pg_stat_activity row, as the pg.sessions probe reads it (sessions.sql): what
    PG001/PG002, the lock graph, the horizon model and terminate all read."""

    pid: int
    backend_start: str | None = None  # ISO 8601; with pid, the session's identity
    xact_start: str | None = None
    query_start: str | None = None
    state_change: str | None = None
    state: str | None = None
    wait_event_type: str | None = None
    wait_event: str | None = None
    user: str | None = None
    application: str | None = None
    client_addr: str | None = None
    host: str | None = None  # client_hostname, else client_addr
    database: str | None = None
    backend_type: str | None = None
    backend_xid: str | None = None
    backend_xmin: str | None = None
    xid_age: int | None = None
    xmin_age: int | None = None
    xact_seconds: float | None = None
    query_seconds: float | None = None
    state_seconds: float | None = None
    query: str | None = None
    superuser: bool | None = None
    blocked_by: tuple[int, ...] = ()
    is_self: bool = False
    standby: bool = False

    @classmethod
    def from_row(cls, row: Row) -> PgSession:
        g = row.get
        return cls(
            pid=to_int(g("pid")),
            backend_start=opt_str(g("backend_start")),
            xact_start=opt_str(g("xact_start")),
            query_start=opt_str(g("query_start")),
            state_change=opt_str(g("state_change")),
            state=opt_str(g("state")),
            wait_event_type=opt_str(g("wait_event_type")),
            wait_event=opt_str(g("wait_event")),
            user=opt_str(g("user")),
            application=opt_str(g("application")),
            client_addr=opt_str(g("client_addr")),
            host=opt_str(g("host")) or opt_str(g("client_addr")),
            database=opt_str(g("database")),
            backend_type=opt_str(g("backend_type")),
            backend_xid=opt_str(g("backend_xid")),
            backend_xmin=opt_str(g("backend_xmin")),
            xid_age=opt_int(g("xid_age")),
            xmin_age=opt_int(g("xmin_age")),
            xact_seconds=opt_float(g("xact_seconds")),
            query_seconds=opt_float(g("query_seconds")),
            state_seconds=opt_float(g("state_seconds")),
            query=opt_str(g("query")),
            superuser=opt_bool(g("superuser")),
            blocked_by=int_list(g("blocked_by")),
            is_self=to_bool(g("is_self")),
            standby=to_bool(g("standby")),
        )

    @property
    def client(self) -> bool:
        """A client backend (older servers and test rows may not say: client then)."""
        return self.backend_type in (None, "client backend")

    @property
    def idle_in_transaction(self) -> bool:
        return self.state in IDLE_STATES

    @property
    def horizon_age(self) -> int | None:
        """XIDs it holds the horizon back by: greatest(age(backend_xid), age(backend_xmin))."""
        ages = [a for a in (self.xid_age, self.xmin_age) if a is not None]
        return max(ages) if ages else None


IDLE_STATES = ("idle in transaction", "idle in transaction (aborted)")
PG_SESSIONS = section("pg.sessions", rows_of(PgSession))


def scoped(rows: tuple[PgSession, ...], scope: str | None) -> tuple[PgSession, ...]:
    """What a target's rules look at: the sessions of its database (pg.sessions is read
    cluster-wide: one read per server serves every target of it), never the connection that
    read them (terminate lists that one, as protected)."""
    return tuple(r for r in rows if not r.is_self and (scope is None or r.database == scope))
