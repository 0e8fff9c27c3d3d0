"""PG201 (who holds the xmin horizon, every kind, ranked) and PG202 (dead tuples per table,
with the holder that keeps them). Pure checks over pg.horizon and pg.dead_tuples.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..durations import format_duration
from ..findings import Finding, SessionIdentity, severity_rank
from ..queues import QUEUE_DEAD_WITHOUT_HOLDER
from ..snapshot import Snapshot
from ..snapshot.pg_mvcc import PgDeadTable
from ..targets.quoting import pg_ident_text
from . import CheckContext, also_reads, check, pure
from .horizon_rank import pinning, ranked_evidence, same_horizon
from .models import dead_tables, horizon_holders
from .pg_horizon import Cause, Holder, attribute
from .series import history


def _worst(*sevs: str | None) -> str | None:
    found = [s for s in sevs if s]
    return max(found, key=severity_rank) if found else None


def _xid_grade(ctx: CheckContext, xid_age: int) -> str | None:
    if xid_age >= ctx.count("xid_critical"):
        return "critical"
    if xid_age >= ctx.count("xid_warning"):
        return "warning"
    return None


def _harm_grade(ctx: CheckContext, hurt: list[tuple[PgDeadTable, Cause]]) -> str | None:
    """A holder that keeps dead tuples is at least a warning; critical once it keeps
    `harm_critical_dead_tuples` in one table (0, the default: never on this path)."""
    if not hurt:
        return None
    limit = ctx.count("harm_critical_dead_tuples")
    if limit and max(t.dead for t, _ in hurt) >= limit:
        return "critical"
    return "warning"


def _min_age(ctx: CheckContext) -> float:
    return ctx.duration("cause_min_age")


def _holder_evidence(h: Holder, rank: int, scope: str | None = None) -> dict[str, object]:
    ev: dict[str, object] = {
        "kind": h.kind,
        "holder": h.holder,
        # "cluster": pins every database (slot, standby feedback); "database": its own only
        "scope": "cluster" if h.database is None else "database",
        "pins": h.scope,
        "rank": rank,
        "xid_age": h.xid_age,
        "age": format_duration(h.age_seconds)
        if h.age_seconds is not None
        else f"{h.xid_age} XIDs (no wall-clock age)",
        "age_seconds": None if h.age_seconds is None else round(h.age_seconds, 1),
        "pid": h.pid,
        "query": h.query,
        # the database it pins: its own, or (cluster-wide) the target's when scoped
        "database": h.database or scope,
    }
    ev.update(h.extra)
    return ev


def _causes(ctx: CheckContext, hs: list[Holder]) -> dict[int, list[tuple[PgDeadTable, Cause]]]:
    """Tables with many dead tuples that each holder keeps (PG201's harm path)."""
    out: dict[int, list[tuple[PgDeadTable, Cause]]] = {}
    for t in dead_tables(ctx.snapshot):
        limit = ctx.count("harm_queue_dead_tuples" if t.queue else "harm_dead_tuples")
        if t.dead < limit:
            continue
        c = attribute(t, hs, _min_age(ctx), int(ctx.count("cause_min_xids")))
        if c is not None:
            out.setdefault(id(c.holder), []).append((t, c))
    return out


def _pg201_summary(ctx: CheckContext, h: Holder, ev: dict[str, Any]) -> str:
    if h.kind == "standby_query" or ev.get("kind_detail") == "standby_query":
        return (
            f"{h.holder} holds the primary's horizon ({h.scope}) for {ev['age']} ({h.xid_age} XIDs)"
        )
    return ctx.summary(scope=h.scope, age=ev["age"], xid_age=h.xid_age, holder=h.holder)


def holder_session(target: str, h: Holder) -> SessionIdentity | None:
    """A backend holder is a session terminate may end; the other kinds are not sessions."""
    if h.kind != "backend" or h.session is None:
        return None
    return h.session.identity(target)


# PG201's inputs when no holder pins the target's scope: it finds nothing then, whatever the
# sections (every finding is a holder's), so one constant stands for all such snapshots
_NO_HOLDER = ("no horizon holder in scope",)


def _horizon_inputs(snap: Snapshot) -> tuple[object, ...]:
    """PG201: the holders (pg.horizon, every pg.sessions row) and the dead tuples they keep
    (pg.dead_tuples, read for the harm without being among the sections it needs). With no
    holder in the target's scope (an idle database whose server's sessions hold no
    snapshot), the constant _NO_HOLDER: a new shared sessions read (every share interval)
    then does not run the check again."""
    if snap.sections.get("pg.horizon") is not None and not _in_scope(
        horizon_holders(snap) or [], snap.scope
    ):
        return _NO_HOLDER
    get = snap.sections.get
    return (get("pg.horizon"), get("pg.sessions"), get("pg.dead_tuples"))


def _in_scope(hs: list[Holder], scope: str | None) -> list[Holder]:
    """A backend or prepared transaction of another database does not pin this one."""
    return [h for h in hs if scope is None or h.database is None or h.database == scope]


@pure(_horizon_inputs)
@also_reads(postgresql=["pg.sessions"])
@check("xmin_horizon", postgresql=["pg.horizon"])
def xmin_horizon(ctx: CheckContext) -> Iterator[Finding]:
    scope = ctx.snapshot.scope
    hs = _in_scope(horizon_holders(ctx.snapshot) or [], scope)
    harm = _causes(ctx, hs)
    for rank, h in enumerate(hs, 1):
        hurt = harm.get(id(h), [])
        sev = _worst(
            ctx.grade(h.age_seconds) if h.age_seconds is not None else None,
            _xid_grade(ctx, h.xid_age),
            _harm_grade(ctx, hurt),
        )
        if not sev:
            continue
        ev = _holder_evidence(h, rank, scope)
        if hurt:
            ev["dead_tuples_kept"] = [
                {
                    "table": t.key,
                    "n_dead_tup": t.n_dead_tup,
                    "confidence": c.confidence,
                }
                for t, c in hurt
            ]
        summary = _pg201_summary(ctx, h, ev)
        if hurt:
            worst = max(hurt, key=lambda tc: tc[0].dead)[0]
            summary += f"; keeps {worst.n_dead_tup} dead tuples in {worst.key}"
        peers = [o for o in hs if same_horizon(o, h)]
        ev["holders_ranked"] = ranked_evidence(peers)
        fix = h.fix
        if len(peers) > 1:
            pos = peers.index(h) + 1
            summary += f" (holder {pos} of {len(peers)})"
            after = peers[pos:]
            if after:
                nxt = after[0]
                fix += (
                    f" Ending it moves the horizon only to the next holder, {nxt.holder} "
                    f"({_age_text(nxt)}): end that one too: {nxt.fix}"
                )
        yield ctx.finding(
            severity=sev,
            subject=h.subject,
            summary=summary,
            fix=fix,
            evidence=ev,
            identity=h.identity,
            session=holder_session(ctx.snapshot.target, h),
        )


def _growth(ctx: CheckContext, t: PgDeadTable) -> tuple[float | None, bool]:
    """Dead tuples per minute over the history window, and 'autovacuum ran, nothing fell'."""
    now, dead = ctx.snapshot.taken_at, float(t.dead)
    points = history(ctx, f"pg.n_dead_tup:{t.key}")
    rate = None
    if points and now - points[0][0] > 0:
        rate = (dead - points[0][1]) / (now - points[0][0]) * 60.0
    av = history(ctx, f"pg.autovacuum_count:{t.key}")
    rising = bool(
        av
        and points
        and float(t.autovacuum_count or 0) > av[0][1]
        and dead >= 0.8 * points[0][1] > 0
    )
    return rate, rising


def _dead_grade(ctx: CheckContext, t: PgDeadTable) -> str | None:
    n = float(t.dead)
    if t.queue:
        if n >= ctx.count("queue_critical"):
            return "critical"
        return "warning" if n >= ctx.count("queue_warning") else None
    return ctx.grade(n)


def _age_text(h: Holder) -> str:
    return format_duration(h.age_seconds) if h.age_seconds is not None else f"{h.xid_age} XIDs"


def autovacuum_off(t: PgDeadTable) -> str | None:
    """'server' (autovacuum = off), 'table' (autovacuum_enabled = false), 'server and table'
    (both: turning the server's on would still leave this table out), or None."""
    server = (t.server_autovacuum or "").lower() == "off"
    table = (t.table_autovacuum_enabled or "").lower() in ("false", "off", "no", "0")
    return " and ".join(w for w, off in (("server", server), ("table", table)) if off) or None


def _autovacuum_fix(off: str, name: str) -> str:
    fixes = []
    if "server" in off:
        fixes.append(
            "turn autovacuum on: ALTER SYSTEM SET autovacuum = on; SELECT pg_reload_conf();"
        )
    if "table" in off:
        fixes.append(f"ALTER TABLE {name} SET (autovacuum_enabled = on);")
    return " ".join(fixes)


def _clause(text: str) -> str:
    """A holder's fix as a clause to join with "; " (its own closing ';' would double)."""
    return text.rstrip().rstrip(";").rstrip()


def _pg202_fix(t: PgDeadTable, pins: list[Holder], off: str | None) -> str:
    name = pg_ident_text(str(t.schema), str(t.table))
    if pins:
        steps = "; ".join(f"{i}) {h.holder}: {_clause(h.fix)}" for i, h in enumerate(pins, 1))
        head = (
            f"End the horizon holder: {_clause(pins[0].fix)}"
            if len(pins) == 1
            else f"End the {len(pins)} horizon holders, oldest first (ending one moves the "
            f"horizon only to the next): {steps}"
        )
        tail = f"; then VACUUM (VERBOSE) {name};"
        if off:
            tail += " Autovacuum is off here too: " + _autovacuum_fix(off, name)
        return head + tail
    if off:
        return f"VACUUM (VERBOSE) {name}; now, then {_autovacuum_fix(off, name)}"
    return (
        f"VACUUM (VERBOSE) {name}; and let autovacuum keep up: ALTER TABLE {name} SET "
        "(autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, "
        "autovacuum_vacuum_cost_delay = 0);"
    )


def _no_holder_cause(off: str | None) -> str:
    if not off:
        return "no horizon holder: autovacuum has not caught up"
    why = []
    if "server" in off:
        why.append("on the server (autovacuum = off)")
    if "table" in off:
        why.append("for this table (autovacuum_enabled = false)")
    return f"autovacuum is off {' and '.join(why)}: nothing vacuums this table"


def _no_dead_tables(snap: Snapshot) -> tuple[object, ...] | None:
    """PG202 reads the clock and the daemon's history for each table it reports, and nothing
    but its section's tables when there is none (an idle database: the probe lists tables
    past a minimum of dead tuples only): pure then, on that section; else it runs."""
    if dead_tables(snap):
        return None
    return (snap.sections.get("pg.dead_tuples"),)


@pure(_no_dead_tables)
@also_reads(postgresql=["pg.sessions"])
@check("dead_tuples", postgresql=["pg.dead_tuples", "pg.horizon"])
def dead_tuples(ctx: CheckContext) -> Iterator[Finding]:
    hs: list[Holder] | None = None  # the holders, once a table is reported
    ratio_min = ctx.number("min_dead_ratio")
    for t in dead_tables(ctx.snapshot):
        dead, live = t.dead, t.n_live_tup or 0
        ratio = dead / (dead + live) if dead + live else 0.0
        sev = _dead_grade(ctx, t)
        if not sev or ratio < ratio_min:
            continue
        if hs is None:
            hs = horizon_holders(ctx.snapshot) or []
        rate, rising = _growth(ctx, t)
        min_xids = int(ctx.count("cause_min_xids"))
        cause = attribute(t, hs, _min_age(ctx), min_xids, rising)
        if t.queue and cause is None and dead < QUEUE_DEAD_WITHOUT_HOLDER:
            # The queue tightening (dbwatch/queues registry) is for a held horizon: a healthy
            # queue's few hundred dead tuples (autovacuum off or not yet run) are no problem.
            continue
        pins = pinning(t, hs, _min_age(ctx), min_xids) if cause else []
        if cause and cause.holder not in pins:
            pins.insert(0, cause.holder)
        off = autovacuum_off(t)
        last = t.vacuum_seconds_ago
        ratio_text = f"{ratio:.0%}"
        last_text = "never" if last is None else f"{format_duration(last)} ago"
        why = cause.reason if cause else _no_holder_cause(off)
        ev: dict[str, object] = {
            "table": t.key,
            "database": t.database,
            "schema": t.schema,
            "dead": dead,
            "live": live,
            "ratio": ratio_text,
            "queue_table": t.queue,
            "last_vacuum": last_text,
            "last_autovacuum_at": t.last_autovacuum,
            "last_vacuum_at": t.last_vacuum,
            "autovacuum_count": t.autovacuum_count,
            "vacuum_count": t.vacuum_count,
            "growth_per_min": None if rate is None else round(rate, 1),
            "holder": cause.holder.holder if cause else None,
            "holder_pid": cause.holder.pid if cause else None,
            "holder_kind": cause.holder.kind if cause else None,
            "holder_subject": cause.holder.subject if cause else None,
            "cause": why,
            "autovacuum": f"off ({off})" if off else "on",
            "holders_ranked": ranked_evidence(pins),
        }
        tail = f"horizon held by {cause.holder.holder}" if cause else why
        if len(pins) > 1:
            tail += f" and {len(pins) - 1} more holder{'s' if len(pins) > 2 else ''}"
        if cause and off:
            tail += f"; autovacuum is off ({off})"
        if rate is not None:
            tail += f"; +{rate:.0f}/min"
        summary = ctx.summary(
            table=t.key,
            dead=dead,
            ratio=ratio_text,
            last_vacuum=last_text,
            horizon=tail,
        )
        yield ctx.finding(
            severity=sev,
            subject=f"table {t.key}",
            summary=summary,
            fix=_pg202_fix(t, pins, off),
            evidence=ev,
            identity=[t.database, t.schema, t.table],
            confidence=cause.confidence if cause else "high",
        )
