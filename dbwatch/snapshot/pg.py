"""Typed rows of the pg snapshot sections (see sections.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TypeVar

from .sections import FromRow, rows_of, section
from .values import (
    JSONObject,
    Read,
    Row,
    TypedRow,
    as_json,
    as_row,
    as_rows,
    opt_bool,
    opt_float,
    opt_int,
    opt_str,
    to_bool,
    to_str,
)

R = TypeVar("R", bound=FromRow)


def _host(row: Row) -> str | None:
    return opt_str(row.get("host")) or opt_str(row.get("client_addr"))


@dataclass(frozen=True)
class PgSession(TypedRow, host=Read(compute=_host)):
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
HORIZON_BACKENDS = 50  # backend holders ranked, oldest first


def horizon_backends(
    rows: tuple[PgSession, ...], limit: int = HORIZON_BACKENDS
) -> tuple[PgSession, ...]:
    """The client backends pinning the xmin horizon, oldest (by XID age) first: a snapshot
    (backend_xmin) or a write (backend_xid). dbwatch's own running reads are left out."""
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
    return tuple(r for r in rows if not r.is_self and (scope is None or r.database == scope))


# --- pg.horizon: every kind of xmin-horizon holder but the backends (those are pg.sessions) --


@dataclass(frozen=True)
class PgInstance:
    """horizon_instance.sql: recovery, feedback, and how a standby's WAL receiver names itself."""

    in_recovery: bool = False
    hot_standby_feedback: str | None = None
    cluster_name: str | None = None
    server_addr: str | None = None
    database: str | None = None
    receiver_slot: str | None = None
    receiver_conninfo: str | None = None
    application_name: str | None = None  # what the primary's pg_stat_replication shows

    @classmethod
    def from_row(cls, row: Row) -> PgInstance:
        g = row.get
        return cls(
            in_recovery=to_bool(g("in_recovery")),
            hot_standby_feedback=opt_str(g("hot_standby_feedback")),
            cluster_name=opt_str(g("cluster_name")),
            server_addr=opt_str(g("server_addr")),
            database=opt_str(g("database")),
            receiver_slot=opt_str(g("receiver_slot")),
            receiver_conninfo=opt_str(g("receiver_conninfo")),
            application_name=opt_str(g("application_name")),
        )


@dataclass(frozen=True)
class PgPrepared:
    """A prepared transaction (horizon_prepared.sql)."""

    gid: str | None = None
    xid: str | None = None
    prepared: str | None = None
    user: str | None = None
    database: str | None = None
    xid_age: int | None = None
    prepared_seconds: float | None = None

    @classmethod
    def from_row(cls, row: Row) -> PgPrepared:
        g = row.get
        return cls(
            gid=opt_str(g("gid")),
            xid=opt_str(g("xid")),
            prepared=opt_str(g("prepared")),
            user=opt_str(g("user")),
            database=opt_str(g("database")),
            xid_age=opt_int(g("xid_age")),
            prepared_seconds=opt_float(g("prepared_seconds")),
        )


@dataclass(frozen=True)
class PgSlot:
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

    @classmethod
    def from_row(cls, row: Row) -> PgSlot:
        g = row.get
        return cls(
            slot_name=to_str(g("slot_name")),
            slot_type=opt_str(g("slot_type")),
            plugin=opt_str(g("plugin")),
            database=opt_str(g("database")),
            active=opt_bool(g("active")),
            active_pid=opt_int(g("active_pid")),
            temporary=opt_bool(g("temporary")),
            xmin=opt_str(g("xmin")),
            catalog_xmin=opt_str(g("catalog_xmin")),
            xmin_age=opt_int(g("xmin_age")),
            catalog_xmin_age=opt_int(g("catalog_xmin_age")),
            wal_status=opt_str(g("wal_status")),
            inactive_since=opt_str(g("inactive_since")),
            inactive_seconds=opt_float(g("inactive_seconds")),
        )


@dataclass(frozen=True)
class PgReplication:
    """A standby connected to this server (horizon_replication.sql)."""

    pid: int | None = None
    user: str | None = None
    application: str | None = None
    client_addr: str | None = None
    client_hostname: str | None = None
    backend_start: str | None = None
    state: str | None = None
    sync_state: str | None = None
    backend_xmin: str | None = None
    xid_age: int | None = None
    slot_name: str | None = None

    @classmethod
    def from_row(cls, row: Row) -> PgReplication:
        g = row.get
        return cls(
            pid=opt_int(g("pid")),
            user=opt_str(g("user")),
            application=opt_str(g("application")),
            client_addr=opt_str(g("client_addr")),
            client_hostname=opt_str(g("client_hostname")),
            backend_start=opt_str(g("backend_start")),
            state=opt_str(g("state")),
            sync_state=opt_str(g("sync_state")),
            backend_xmin=opt_str(g("backend_xmin")),
            xid_age=opt_int(g("xid_age")),
            slot_name=opt_str(g("slot_name")),
        )

    def to_json(self) -> JSONObject:
        return {k: as_json(v) for k, v in asdict(self).items()}


def _rows(cls: type[R], data: object) -> tuple[R, ...]:
    return tuple(cls.from_row(r) for r in as_rows(data))


@dataclass(frozen=True)
class PgPeer:
    """A configured peer read through one short session: the primary of a standby target
    (replication, slots) or a standby of a primary target (instance, its oldest snapshots)."""

    target: str
    error: str | None = None
    instance: PgInstance | None = None
    backends: tuple[PgSession, ...] = ()
    replication: tuple[PgReplication, ...] = ()
    slots: tuple[PgSlot, ...] = ()

    @classmethod
    def from_row(cls, row: Row) -> PgPeer:
        g = row.get
        inst = g("instance")
        return cls(
            target=to_str(g("target")),
            error=opt_str(g("error")),
            instance=None if inst is None else PgInstance.from_row(as_row(inst)),
            backends=_rows(PgSession, g("backends")),
            replication=_rows(PgReplication, g("replication")),
            slots=_rows(PgSlot, g("slots")),
        )


@dataclass(frozen=True)
class PgHorizon:
    """The pg.horizon section. Its backend holders are the pg.sessions rows (one read of
    pg_stat_activity per cycle); `backends` is filled only by hand-built snapshots (tests)."""

    instance: PgInstance = PgInstance()
    prepared: tuple[PgPrepared, ...] = ()
    slots: tuple[PgSlot, ...] = ()
    replication: tuple[PgReplication, ...] = ()
    primary: PgPeer | None = None
    standbys: tuple[PgPeer, ...] = ()
    backends: tuple[PgSession, ...] = ()

    @classmethod
    def from_row(cls, row: Row) -> PgHorizon:
        g = row.get
        prim = g("primary")
        return cls(
            instance=PgInstance.from_row(as_row(g("instance"))),
            prepared=_rows(PgPrepared, g("prepared")),
            slots=_rows(PgSlot, g("slots")),
            replication=_rows(PgReplication, g("replication")),
            primary=None if not prim else PgPeer.from_row(as_row(prim)),
            standbys=_rows(PgPeer, g("standbys")),
            backends=_rows(PgSession, g("backends")),
        )


def build_horizon(data: object) -> PgHorizon:
    return data if isinstance(data, PgHorizon) else PgHorizon.from_row(as_row(data))


PG_HORIZON = section("pg.horizon", build_horizon)
