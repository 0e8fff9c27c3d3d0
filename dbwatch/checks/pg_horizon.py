"""The xmin horizon's holders as one ranked list (backends, prepared transactions, slots,
standby feedback, a standby's own queries), and which holder explains a table's dead tuples.

Pure: reads the pg.horizon / pg.dead_tuples sections, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field, replace

from ..durations import format_duration
from ..frozen import frozen
from ..snapshot.identity import IDLE_STATES
from ..snapshot.pg import (
    PgHorizon,
    PgInstance,
    PgPeer,
    PgPrepared,
    PgReplication,
    PgSession,
    PgSlot,
    horizon_backends,
)
from ..snapshot.pg_mvcc import PgDeadTable
from ..snapshot.values import iso
from .session_advice import pg_session_setting

IDLE = IDLE_STATES


@frozen
class Holder:
    kind: str  # backend | prepared | slot | standby_feedback | standby_query
    subject: str
    holder: str  # who, for people: "pid 42 (etl@analytics, idle in transaction)"
    scope: str  # "database app" | "all databases" | "catalogs (all databases)"
    database: str | None  # the one database it pins; None = every database
    xid_age: int
    age_seconds: float | None  # wall-clock age where one exists
    fix: str
    identity: list[object]
    catalog_only: bool = False
    pid: int | None = None
    query: str | None = None
    extra: dict[str, object] = field(default_factory=dict)
    session: PgSession | None = None  # a backend holder's pg.sessions row (terminate's identity)


def _quote(text: object) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _who(r: PgSession) -> str:
    addr = f", {r.client_addr}" if r.client_addr else ""
    return f"{r.user or '?'}@{r.application or '-'}{addr}"


def _backend_fix(r: PgSession, where: str = "") -> str:
    on = f"on {where}: " if where else ""
    pid = r.pid
    if r.state in IDLE:
        return (
            f"{on}SELECT pg_terminate_backend({pid}); (cancel does nothing to an idle "
            "session), or end the transaction in the application; prevent it: "
            + pg_session_setting(r, "idle_in_transaction_session_timeout", "5min")
        )
    return (
        f"{on}SELECT pg_cancel_backend({pid}); or, if it keeps its transaction open, "
        f"SELECT pg_terminate_backend({pid});"
    )


def backend_holder(r: PgSession) -> Holder:
    pins = (
        "a write (backend_xid)"
        if r.backend_xid and not r.backend_xmin
        else "a snapshot (backend_xmin)"
    )
    db = r.database
    return Holder(
        kind="backend",
        subject=f"pid {r.pid}",
        database=db,
        scope=f"database {db}",
        holder=f"pid {r.pid} ({_who(r)}, {r.state or '?'})",
        xid_age=r.horizon_age or 0,
        age_seconds=r.xact_seconds,
        fix=_backend_fix(r),
        pid=r.pid,
        query=r.query,
        identity=["backend", r.pid, iso(r.backend_start), iso(r.xact_start)],
        extra={
            "pins_by": pins,
            "state": r.state,
            "user": r.user,
            "application": r.application,
            "client_addr": r.client_addr,
            "backend_xid": r.backend_xid,
            "backend_xmin": r.backend_xmin,
            "xact_start": iso(r.xact_start),
            # with pid, the session's identity: terminate must never hit a recycled pid
            "backend_start": iso(r.backend_start),
        },
        session=r,
    )


def prepared_holder(r: PgPrepared) -> Holder:
    gid, db = r.gid, r.database
    return Holder(
        kind="prepared",
        subject=f"prepared {gid}",
        database=db,
        scope=f"database {db}",
        holder=f"prepared transaction {_quote(gid)} (owner {r.user}, xid {r.xid})",
        xid_age=r.xid_age or 0,
        age_seconds=r.prepared_seconds,
        fix=(
            f"connect to database {db} and run ROLLBACK PREPARED {_quote(gid)}; "
            "(or COMMIT PREPARED if its coordinator says it must commit)"
        ),
        identity=["prepared", gid, r.xid],
        extra={"gid": gid, "xid": r.xid, "prepared": r.prepared, "user": r.user},
    )


def _standby_name(rep: PgReplication) -> str:
    addr = f", {rep.client_addr}" if rep.client_addr else ""
    return f"standby {rep.application or '?'}{addr}"


def _feedback_fix(rep: PgReplication) -> str:
    return (
        f"cancel the long query on {_standby_name(rep)} (pg_cancel_backend(<pid>) on the "
        "standby), or set hot_standby_feedback = off there if it can live with conflicts"
    )


def feedback_holder(rep: PgReplication, slot: PgSlot | None = None) -> Holder:
    via = f" on slot {slot.slot_name}" if slot else ""
    xid_age = (slot.xmin_age if slot else rep.xid_age) or 0
    return Holder(
        kind="standby_feedback",
        subject=f"{_standby_name(rep)}",
        database=None,
        scope="all databases",
        xid_age=xid_age,
        age_seconds=None,
        holder=f"{_standby_name(rep)} through hot_standby_feedback{via}",
        fix=_feedback_fix(rep),
        identity=["standby_feedback", rep.pid, iso(rep.backend_start)],
        extra={
            "application": rep.application,
            "client_addr": rep.client_addr,
            "walsender_pid": rep.pid,
            "slot": slot.slot_name if slot else None,
            "feedback_xmin": (slot.xmin if slot else None) or rep.backend_xmin,
        },
    )


def slot_holders(s: PgSlot) -> list[Holder]:
    name = s.slot_name
    state = "active" if s.active else "inactive"
    desc = f"{s.slot_type} slot {_quote(name)} ({state}"
    desc += f", {s.plugin} on database {s.database})" if s.plugin else ")"
    fix = (
        f"if nothing consumes it any more: SELECT pg_drop_replication_slot({_quote(name)}); "
        "otherwise fix or reconnect its consumer so it advances"
    )
    age = s.inactive_seconds if not s.active else None
    extra: dict[str, object] = {
        "slot": name,
        "slot_type": s.slot_type,
        "active": s.active,
        "inactive_since": s.inactive_since,
        "xmin": s.xmin,
        "catalog_xmin": s.catalog_xmin,
        "wal_status": s.wal_status,
    }
    out = []
    if s.xmin:
        out.append(
            Holder(
                kind="slot",
                subject=f"slot {name}",
                holder=desc,
                database=None,
                scope="all databases",
                xid_age=s.xmin_age or 0,
                age_seconds=age,
                fix=fix,
                identity=["slot", name, "xmin"],
                extra=extra,
            )
        )
    if s.catalog_xmin and (s.catalog_xmin_age or 0) > (s.xmin_age or 0):
        out.append(
            Holder(
                kind="slot",
                subject=f"slot {name} (catalogs)",
                holder=desc,
                database=None,
                scope="catalogs (all databases)",
                catalog_only=True,
                xid_age=s.catalog_xmin_age or 0,
                age_seconds=age,
                fix=fix,
                identity=["slot", name, "catalog_xmin"],
                extra=extra,
            )
        )
    return out


def match_replication(
    rows: Sequence[PgReplication], inst: PgInstance, oldest_xmin: str | None
) -> PgReplication | None:
    """The primary's pg_stat_replication row of this standby: by slot, then application_name,
    narrowed by client address and by the feedback xmin when several standbys share a name."""
    if inst.receiver_slot:
        by_slot = [r for r in rows if r.slot_name == inst.receiver_slot]
        if by_slot:
            return by_slot[0]
    cands = [r for r in rows if r.application == inst.application_name]
    if len(cands) > 1 and inst.server_addr:
        cands = [r for r in cands if r.client_addr == inst.server_addr] or cands
    if len(cands) > 1 and oldest_xmin:
        cands = [r for r in cands if r.backend_xmin == oldest_xmin] or cands
    return cands[0] if len(cands) == 1 else None


def standby_query_holder(
    r: PgSession, standby: str, primary: str | None, rep: PgReplication | None
) -> Holder:
    """A query on a standby with hot_standby_feedback: it holds the primary's horizon."""
    app = r.application or "unnamed"
    where = f"the primary {primary}" if primary else "the primary"
    h = backend_holder(r)
    extra = dict(
        h.extra,
        standby=standby,
        primary=primary,
        primary_replication=None if rep is None else rep.to_json(),
        standby_pid=r.pid,
    )
    return Holder(
        kind="standby_query",
        subject=f"pid {r.pid} on {standby}",
        holder=f"the {app} query pid {r.pid} on {standby}",
        database=None,
        scope=f"all databases of {where}",
        xid_age=h.xid_age,
        age_seconds=h.age_seconds,
        fix=_backend_fix(r, standby),
        pid=r.pid,
        query=r.query,
        identity=["standby_query", standby, r.pid, iso(r.backend_start), iso(r.xact_start)],
        extra=extra,
    )


def _linked(h: Holder, standbys: Sequence[PgPeer], rows: Sequence[PgReplication]) -> Holder:
    """Standby feedback named by the configured standby's own oldest query."""
    for sb in standbys:
        if sb.error or not sb.backends or sb.instance is None:
            continue
        oldest = sb.backends[0]
        rep = match_replication(rows, sb.instance, oldest.backend_xmin)
        if rep is None or rep.pid != h.extra.get("walsender_pid"):
            continue
        q = standby_query_holder(oldest, sb.target, None, rep)
        return replace(
            h,
            holder=q.holder,
            age_seconds=q.age_seconds,
            pid=q.pid,
            query=q.query,
            fix=q.fix,
            extra={**h.extra, **q.extra, "kind_detail": "standby_query"},
        )
    return h


def holders(hz: PgHorizon, target: str, sessions: Sequence[PgSession] = ()) -> list[Holder]:
    """Every holder, oldest (by XID age) first: the backends are the pg.sessions rows (the
    whole cluster; the caller applies the target's scope), the rest the pg.horizon section."""
    # the read's own tuple (a Built rows tuple: tuple() of it would be a copy, and the
    # backends ranked again for every target instead of once per shared read)
    rows = sessions if isinstance(sessions, tuple) else tuple(sessions)
    backends = hz.backends or horizon_backends(rows)
    inst = hz.instance
    out: list[Holder] = []
    if inst.in_recovery:
        if str(inst.hot_standby_feedback) != "on":
            return []  # without feedback a standby's queries do not hold the primary back
        prim = hz.primary
        rep = None
        if prim is not None and not prim.error and backends:
            rep = match_replication(prim.replication, inst, backends[0].backend_xmin)
        name = prim.target if prim is not None else None
        out = [standby_query_holder(r, target, name, rep) for r in backends]
        return sorted(out, key=lambda h: -h.xid_age)
    out += [backend_holder(r) for r in backends]
    out += [prepared_holder(r) for r in hz.prepared]
    by_pid = {r.pid: r for r in hz.replication}
    fed_by_slot = set()
    for s in hz.slots:
        rep = by_pid.get(s.active_pid) if s.active else None
        if rep is not None and s.slot_type == "physical" and s.xmin:
            out.append(feedback_holder(rep, s))
            fed_by_slot.add(rep.pid)
            s = replace(s, xmin=None)
        out += slot_holders(s)
    out += [
        feedback_holder(r) for r in hz.replication if r.backend_xmin and r.pid not in fed_by_slot
    ]
    out = [
        _linked(h, hz.standbys, hz.replication) if h.kind == "standby_feedback" else h for h in out
    ]
    return sorted(out, key=lambda h: -h.xid_age)


@frozen
class Cause:
    holder: Holder
    confidence: str  # high: vacuum ran while held | probable: held, not yet vacuumed
    reason: str


def in_scope(h: Holder, database: str | None) -> bool:
    return not h.catalog_only and (h.database is None or h.database == database)


def attribute(
    table: PgDeadTable,
    hs: list[Holder],
    min_age: float,
    min_xids: int,
    autovacuum_rising: bool = False,
) -> Cause | None:
    """The holder that keeps this table's dead tuples, if one plausibly does.

    A vacuum leaves n_dead_tup at what it could not remove: a vacuum after the holder began,
    with dead tuples still high, proves the horizon is held (so does autovacuum_count rising
    while n_dead_tup stays). Otherwise an old enough holder is the probable cause.
    """
    vac = table.vacuum_seconds_ago
    dead = table.n_dead_tup
    for h in (h for h in hs if in_scope(h, table.database)):
        age = h.age_seconds
        if age is not None and vac is not None and vac < age:
            return Cause(
                h,
                "high",
                f"vacuumed {format_duration(vac)} ago, after {h.holder} "
                f"began {format_duration(age)} ago, and {dead} dead tuples "
                "are still there: they could not be removed",
            )
        if autovacuum_rising:
            return Cause(
                h,
                "high",
                "autovacuum keeps running and n_dead_tup does not fall: "
                f"the horizon is held, oldest holder {h.holder}",
            )
        old_enough = age >= min_age if age is not None else h.xid_age >= min_xids
        if old_enough:
            since = "never vacuumed" if vac is None else f"last vacuumed {format_duration(vac)} ago"
            return Cause(
                h,
                "probable",
                f"{h.holder} has pinned the horizon for "
                f"{format_duration(age) if age is not None else f'{h.xid_age} XIDs'}"
                f" ({since}); rows that died after its snapshot "
                "cannot be removed until it ends",
            )
    return None
