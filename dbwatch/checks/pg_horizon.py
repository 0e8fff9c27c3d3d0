"""The xmin horizon's holders as one ranked list (backends, prepared transactions, slots,
standby feedback, a standby's own queries), and which holder explains a table's dead tuples.

Pure: reads the pg.horizon / pg.dead_tuples sections, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..durations import format_duration
from ..snapshot.values import opt_str
from .session_advice import pg_role_setting

IDLE = ("idle in transaction", "idle in transaction (aborted)")


@dataclass(frozen=True)
class Holder:
    kind: str  # backend | prepared | slot | standby_feedback | standby_query
    subject: str
    holder: str  # who, for people: "pid 42 (etl@analytics, idle in transaction)"
    scope: str  # "database app" | "all databases" | "catalogs (all databases)"
    database: str | None  # the one database it pins; None = every database
    xid_age: int
    age_seconds: float | None  # wall-clock age where one exists
    fix: str
    identity: list[Any]
    catalog_only: bool = False
    pid: int | None = None
    query: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _quote(text: Any) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _num(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _who(r: dict[str, Any]) -> str:
    addr = f", {r['client_addr']}" if r.get("client_addr") else ""
    return f"{r.get('user') or '?'}@{r.get('application') or '-'}{addr}"


def _backend_fix(pid: Any, state: Any, where: str = "", r: dict[str, Any] | None = None) -> str:
    on = f"on {where}: " if where else ""
    if state in IDLE:
        return (
            f"{on}SELECT pg_terminate_backend({pid}); (cancel does nothing to an idle "
            "session), or end the transaction in the application; prevent it: "
            + pg_role_setting(
                opt_str((r or {}).get("user")),
                opt_str((r or {}).get("database")),
                "idle_in_transaction_session_timeout",
                "5min",
            )
        )
    return (
        f"{on}SELECT pg_cancel_backend({pid}); or, if it keeps its transaction open, "
        f"SELECT pg_terminate_backend({pid});"
    )


def backend_holder(r: dict[str, Any]) -> Holder:
    pins = (
        "a write (backend_xid)"
        if r.get("backend_xid") and not r.get("backend_xmin")
        else "a snapshot (backend_xmin)"
    )
    db = r.get("database")
    return Holder(
        kind="backend",
        subject=f"pid {r['pid']}",
        database=db,
        scope=f"database {db}",
        holder=f"pid {r['pid']} ({_who(r)}, {r.get('state') or '?'})",
        xid_age=_num(r.get("xid_age")),
        age_seconds=r.get("xact_seconds"),
        fix=_backend_fix(r["pid"], r.get("state"), r=r),
        pid=r["pid"],
        query=r.get("query"),
        identity=["backend", r["pid"], r.get("backend_start"), r.get("xact_start")],
        extra={
            "pins_by": pins,
            "state": r.get("state"),
            "user": r.get("user"),
            "application": r.get("application"),
            "client_addr": r.get("client_addr"),
            "backend_xid": r.get("backend_xid"),
            "backend_xmin": r.get("backend_xmin"),
            "xact_start": r.get("xact_start"),
            # with pid, the session's identity: terminate must never hit a recycled pid
            "backend_start": r.get("backend_start"),
        },
    )


def prepared_holder(r: dict[str, Any]) -> Holder:
    gid, db = r.get("gid"), r.get("database")
    return Holder(
        kind="prepared",
        subject=f"prepared {gid}",
        database=db,
        scope=f"database {db}",
        holder=f"prepared transaction {_quote(gid)} (owner {r.get('user')}, xid {r.get('xid')})",
        xid_age=_num(r.get("xid_age")),
        age_seconds=r.get("prepared_seconds"),
        fix=(
            f"connect to database {db} and run ROLLBACK PREPARED {_quote(gid)}; "
            "(or COMMIT PREPARED if its coordinator says it must commit)"
        ),
        identity=["prepared", gid, r.get("xid")],
        extra={
            "gid": gid,
            "xid": r.get("xid"),
            "prepared": r.get("prepared"),
            "user": r.get("user"),
        },
    )


def _standby_name(rep: dict[str, Any]) -> str:
    addr = f", {rep['client_addr']}" if rep.get("client_addr") else ""
    return f"standby {rep.get('application') or '?'}{addr}"


def _feedback_fix(rep: dict[str, Any]) -> str:
    return (
        f"cancel the long query on {_standby_name(rep)} (pg_cancel_backend(<pid>) on the "
        "standby), or set hot_standby_feedback = off there if it can live with conflicts"
    )


def feedback_holder(rep: dict[str, Any], slot: dict[str, Any] | None = None) -> Holder:
    via = f" on slot {slot['slot_name']}" if slot else ""
    xid_age = _num(slot.get("xmin_age") if slot else rep.get("xid_age"))
    return Holder(
        kind="standby_feedback",
        subject=f"{_standby_name(rep)}",
        database=None,
        scope="all databases",
        xid_age=xid_age,
        age_seconds=None,
        holder=f"{_standby_name(rep)} through hot_standby_feedback{via}",
        fix=_feedback_fix(rep),
        identity=["standby_feedback", rep.get("pid"), rep.get("backend_start")],
        extra={
            "application": rep.get("application"),
            "client_addr": rep.get("client_addr"),
            "walsender_pid": rep.get("pid"),
            "slot": slot["slot_name"] if slot else None,
            "feedback_xmin": (slot or {}).get("xmin") or rep.get("backend_xmin"),
        },
    )


def slot_holders(s: dict[str, Any]) -> list[Holder]:
    name = s["slot_name"]
    state = "active" if s.get("active") else "inactive"
    desc = f"{s.get('slot_type')} slot {_quote(name)} ({state}"
    desc += f", {s.get('plugin')} on database {s.get('database')})" if s.get("plugin") else ")"
    fix = (
        f"if nothing consumes it any more: SELECT pg_drop_replication_slot({_quote(name)}); "
        "otherwise fix or reconnect its consumer so it advances"
    )
    age = s.get("inactive_seconds") if not s.get("active") else None
    extra = {
        "slot": name,
        "slot_type": s.get("slot_type"),
        "active": s.get("active"),
        "inactive_since": s.get("inactive_since"),
        "xmin": s.get("xmin"),
        "catalog_xmin": s.get("catalog_xmin"),
        "wal_status": s.get("wal_status"),
    }
    out = []
    if s.get("xmin"):
        out.append(
            Holder(
                kind="slot",
                subject=f"slot {name}",
                holder=desc,
                database=None,
                scope="all databases",
                xid_age=_num(s.get("xmin_age")),
                age_seconds=age,
                fix=fix,
                identity=["slot", name, "xmin"],
                extra=extra,
            )
        )
    if s.get("catalog_xmin") and _num(s.get("catalog_xmin_age")) > _num(s.get("xmin_age")):
        out.append(
            Holder(
                kind="slot",
                subject=f"slot {name} (catalogs)",
                holder=desc,
                database=None,
                scope="catalogs (all databases)",
                catalog_only=True,
                xid_age=_num(s.get("catalog_xmin_age")),
                age_seconds=age,
                fix=fix,
                identity=["slot", name, "catalog_xmin"],
                extra=extra,
            )
        )
    return out


def match_replication(
    rows: list[dict[str, Any]], inst: dict[str, Any], oldest_xmin: str | None
) -> dict[str, Any] | None:
    """The primary's pg_stat_replication row of this standby: by slot, then application_name,
    narrowed by client address and by the feedback xmin when several standbys share a name."""
    if inst.get("receiver_slot"):
        by_slot = [r for r in rows if r.get("slot_name") == inst["receiver_slot"]]
        if by_slot:
            return by_slot[0]
    cands = [r for r in rows if r.get("application") == inst.get("application_name")]
    for key, want in (("client_addr", inst.get("server_addr")), ("backend_xmin", oldest_xmin)):
        if len(cands) > 1 and want:
            cands = [r for r in cands if r.get(key) == want] or cands
    return cands[0] if len(cands) == 1 else None


def standby_query_holder(
    r: dict[str, Any], standby: str, primary: str | None, rep: dict[str, Any] | None
) -> Holder:
    """A query on a standby with hot_standby_feedback: it holds the primary's horizon."""
    app = r.get("application") or "unnamed"
    where = f"the primary {primary}" if primary else "the primary"
    h = backend_holder(r)
    extra = dict(
        h.extra, standby=standby, primary=primary, primary_replication=rep, standby_pid=r["pid"]
    )
    return Holder(
        kind="standby_query",
        subject=f"pid {r['pid']} on {standby}",
        holder=f"the {app} query pid {r['pid']} on {standby}",
        database=None,
        scope=f"all databases of {where}",
        xid_age=h.xid_age,
        age_seconds=h.age_seconds,
        fix=_backend_fix(r["pid"], r.get("state"), standby, r),
        pid=r["pid"],
        query=r.get("query"),
        identity=["standby_query", standby, r["pid"], r.get("backend_start"), r.get("xact_start")],
        extra=extra,
    )


def _linked(h: Holder, standbys: list[dict[str, Any]], rows: list[dict[str, Any]]) -> Holder:
    """Standby feedback named by the configured standby's own oldest query."""
    for sb in standbys:
        if sb.get("error") or not sb.get("backends"):
            continue
        oldest = sb["backends"][0]
        rep = match_replication(rows, sb["instance"], oldest.get("backend_xmin"))
        if rep is None or rep.get("pid") != h.extra.get("walsender_pid"):
            continue
        q = standby_query_holder(oldest, sb["target"], None, rep)
        return Holder(
            **{
                **h.__dict__,
                "holder": q.holder,
                "age_seconds": q.age_seconds,
                "pid": q.pid,
                "query": q.query,
                "fix": q.fix,
                "extra": {**h.extra, **q.extra, "kind_detail": "standby_query"},
            }
        )
    return h


def holders(section: dict[str, Any], target: str) -> list[Holder]:
    """Every holder in the pg.horizon section, oldest (by XID age) first."""
    inst = section.get("instance") or {}
    out: list[Holder] = []
    if inst.get("in_recovery"):
        if str(inst.get("hot_standby_feedback")) != "on":
            return []  # without feedback a standby's queries do not hold the primary back
        prim = section.get("primary") or {}
        backends = section.get("backends") or []
        rep = None
        if prim and not prim.get("error") and backends:
            rep = match_replication(
                prim.get("replication") or [], inst, backends[0].get("backend_xmin")
            )
        out = [standby_query_holder(r, target, prim.get("target"), rep) for r in backends]
        return sorted(out, key=lambda h: -h.xid_age)
    out += [backend_holder(r) for r in section.get("backends") or []]
    out += [prepared_holder(r) for r in section.get("prepared") or []]
    reps = section.get("replication") or []
    by_pid = {r.get("pid"): r for r in reps}
    fed_by_slot = set()
    for s in section.get("slots") or []:
        rep = by_pid.get(s.get("active_pid")) if s.get("active") else None
        if rep is not None and s.get("slot_type") == "physical" and s.get("xmin"):
            out.append(feedback_holder(rep, s))
            fed_by_slot.add(rep.get("pid"))
            s = {**s, "xmin": None}
        out += slot_holders(s)
    out += [
        feedback_holder(r)
        for r in reps
        if r.get("backend_xmin") and r.get("pid") not in fed_by_slot
    ]
    standbys = section.get("standbys") or []
    out = [_linked(h, standbys, reps) if h.kind == "standby_feedback" else h for h in out]
    return sorted(out, key=lambda h: -h.xid_age)


@dataclass(frozen=True)
class Cause:
    holder: Holder
    confidence: str  # high: vacuum ran while held | probable: held, not yet vacuumed
    reason: str


def in_scope(h: Holder, database: str | None) -> bool:
    return not h.catalog_only and (h.database is None or h.database == database)


def attribute(
    table: dict[str, Any],
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
    vac = table.get("vacuum_seconds_ago")
    dead = table.get("n_dead_tup")
    for h in (h for h in hs if in_scope(h, table.get("database"))):
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
