"""Typed rows of the pg snapshot sections (see sections.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from ..frozen import frozen
from .identity import IDLE_STATES, SessionIdentity
from .memo import per_read
from .sections import one_of, rows_of, section
from .values import (
    JSONObject,
    Read,
    Row,
    TypedRow,
    as_json,
    as_row,
    built,
    opt_str,
)

if TYPE_CHECKING:
    from . import Snapshot


def _host(row: Row) -> str | None:
    return opt_str(row.get("host")) or opt_str(row.get("client_addr"))


@frozen
class PgSession(TypedRow, host=Read(compute=_host)):
    """One pg_stat_activity row, as the pg.sessions probe reads it (sessions.sql): what
    PG001/PG002, the lock graph, the horizon model and terminate all read."""

    pid: int
    backend_start: datetime | None = None  # with pid, the session's identity
    xact_start: datetime | None = None
    query_start: datetime | None = None
    state_change: datetime | None = None
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

    def identity(self, server: str) -> SessionIdentity:
        """The session a finding names and terminate finds again: pid + backend_start (+ its
        transaction). The one place a PostgreSQL SessionIdentity is made."""
        return SessionIdentity(
            engine="postgresql",
            server=server,
            database=self.database,
            pid=self.pid,
            backend_start=self.backend_start,
            xact_start=self.xact_start,
        )


PG_SESSIONS = section("pg.sessions", rows_of(PgSession))
HORIZON_BACKENDS = 50  # backend holders ranked, oldest first


T = TypeVar("T")


def _derived(rows: tuple[PgSession, ...], what: str, arg: object, make: Callable[[], T]) -> T:
    """Derived from one pg.sessions read (which the daemon shares between that server's
    targets): once per read, not once per target (snapshot.memo)."""
    return per_read(rows, (what, arg), make)


def horizon_backends(
    rows: tuple[PgSession, ...], limit: int = HORIZON_BACKENDS
) -> tuple[PgSession, ...]:
    """The client backends pinning the xmin horizon, oldest (by XID age) first: a snapshot
    (backend_xmin) or a write (backend_xid). dbwatch's own running reads are left out."""
    return _derived(rows, "horizon", limit, lambda: _horizon_backends(rows, limit))


def _horizon_backends(rows: tuple[PgSession, ...], limit: int) -> tuple[PgSession, ...]:
    pins = [
        r
        for r in rows
        if r.client
        and not r.is_self
        and not (r.application == "dbwatch" and r.state == "active")
        and (r.backend_xid is not None or r.backend_xmin is not None)
    ]
    pins.sort(key=lambda r: -(r.horizon_age or 0))
    return tuple(pins[:limit])


def scoped(rows: tuple[PgSession, ...], scope: str | None) -> tuple[PgSession, ...]:
    """What a target's rules look at: the sessions of its database (pg.sessions is read
    cluster-wide: one read per server serves every target of it), never the connection that
    read them (terminate lists that one, as protected)."""
    if scope is None:
        return tuple(r for r in rows if not r.is_self)
    return _derived(rows, "by_database", None, lambda: _by_database(rows)).get(scope, ())


def scoped_sessions(snap: Snapshot) -> tuple[PgSession, ...]:
    """scoped() of the snapshot's pg.sessions for its scope, once per snapshot: PG001, PG002,
    PG101 and the daemon's figures each asked for it (four filters of one read a cycle)."""
    return snap.model("pg.sessions.scoped", _scoped_sessions)


def _scoped_sessions(snap: Snapshot) -> tuple[PgSession, ...]:
    return scoped(snap.get(PG_SESSIONS) or (), snap.scope)


def _by_database(rows: tuple[PgSession, ...]) -> dict[str | None, tuple[PgSession, ...]]:
    out: dict[str | None, list[PgSession]] = {}
    for r in rows:
        if not r.is_self:
            out.setdefault(r.database, []).append(r)
    return {k: tuple(v) for k, v in out.items()}


# --- pg.horizon: every kind of xmin-horizon holder but the backends (those are pg.sessions) --


@frozen
class PgInstance(TypedRow):
    """horizon_instance.sql: recovery, feedback, and how a standby's WAL receiver names itself."""

    in_recovery: bool = False
    hot_standby_feedback: str | None = None
    cluster_name: str | None = None
    server_addr: str | None = None
    database: str | None = None
    receiver_slot: str | None = None
    receiver_conninfo: str | None = None
    application_name: str | None = None  # what the primary's pg_stat_replication shows


@frozen
class PgPrepared(TypedRow):
    """A prepared transaction (horizon_prepared.sql)."""

    gid: str | None = None
    xid: str | None = None
    prepared: str | None = None
    user: str | None = None
    database: str | None = None
    xid_age: int | None = None
    prepared_seconds: float | None = None


@frozen
class PgSlot(TypedRow):
    """A replication slot holding an xmin or a catalog_xmin (horizon_slots*.sql)."""

    slot_name: str = ""
    slot_type: str | None = None
    plugin: str | None = None
    database: str | None = None
    active: bool | None = None
    active_pid: int | None = None
    temporary: bool | None = None
    xmin: str | None = None
    catalog_xmin: str | None = None
    xmin_age: int | None = None
    catalog_xmin_age: int | None = None
    wal_status: str | None = None
    inactive_since: str | None = None
    inactive_seconds: float | None = None


@frozen
class PgReplication(TypedRow):
    """A standby connected to this server (horizon_replication.sql)."""

    pid: int | None = None
    user: str | None = None
    application: str | None = None
    client_addr: str | None = None
    client_hostname: str | None = None
    backend_start: datetime | None = None  # with pid, the walsender's identity
    state: str | None = None
    sync_state: str | None = None
    backend_xmin: str | None = None
    xid_age: int | None = None
    slot_name: str | None = None

    def to_json(self) -> JSONObject:
        return {k: as_json(v) for k, v in asdict(self).items()}


def _instance(v: object) -> PgInstance | None:
    return None if v is None else PgInstance.from_row(as_row(v))


@frozen
class PgPeer(
    TypedRow,
    instance=Read(convert=_instance),
    backends=Read(convert=built(PgSession)),
    replication=Read(convert=built(PgReplication)),
    slots=Read(convert=built(PgSlot)),
):
    """A configured peer read through one short session: the primary of a standby target
    (replication, slots) or a standby of a primary target (instance, its oldest snapshots)."""

    target: str
    error: str | None = None
    instance: PgInstance | None = None
    backends: tuple[PgSession, ...] = ()
    replication: tuple[PgReplication, ...] = ()
    slots: tuple[PgSlot, ...] = ()


def _peer(v: object) -> PgPeer | None:
    return None if not v else PgPeer.from_row(as_row(v))


@frozen
class PgHorizon(
    TypedRow,
    instance=Read(convert=lambda v: PgInstance.from_row(as_row(v))),
    prepared=Read(convert=built(PgPrepared)),
    slots=Read(convert=built(PgSlot)),
    replication=Read(convert=built(PgReplication)),
    primary=Read(convert=_peer),
    standbys=Read(convert=built(PgPeer)),
    backends=Read(convert=built(PgSession)),
):
    """The pg.horizon section. Its backend holders are the pg.sessions rows (one read of
    pg_stat_activity per cycle); `backends` is filled only by hand-built snapshots (tests)."""

    instance: PgInstance = PgInstance()
    prepared: tuple[PgPrepared, ...] = ()
    slots: tuple[PgSlot, ...] = ()
    replication: tuple[PgReplication, ...] = ()
    primary: PgPeer | None = None
    standbys: tuple[PgPeer, ...] = ()
    backends: tuple[PgSession, ...] = ()


build_horizon = one_of(PgHorizon)


PG_HORIZON = section("pg.horizon", build_horizon)
