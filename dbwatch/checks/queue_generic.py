"""QU001–QU004 words for queue tables read by the generic model (library "generic"): evidence
naming the column of each role, fixes in terms of the table and its columns (no library's
API), and QU002's limits where the table holds none (its lease, timeout or heartbeat first).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..durations import format_duration
from ..findings import Finding
from ..snapshot.queues import QueueTableStats
from ..targets.quoting import my_ident, pg_ident_text
from . import CheckContext

GENERIC = "generic"


def is_generic(t: QueueTableStats) -> bool:
    return t.library == GENERIC


def evidence(t: QueueTableStats) -> dict[str, object]:
    """What the model read: each role's column, the status values by state (and unmapped),
    where they came from, the rows read, and what the table cannot tell."""
    by_state: dict[str, list[str]] = {}
    for value, state in t.statuses:
        by_state.setdefault(state, []).append(value)
    return {
        "roles": dict(t.roles),
        "statuses": by_state,
        "unmapped_statuses": list(t.unmapped),
        "statuses_from": t.statuses_from,
        "rows_read": t.window_text,
        "estimated": (
            "counts and ages over the rows read (window), not the whole table; jobs outside "
            "it are not seen"
        ),
        "unjudged": list(t.unjudged),
    }


def _ident(engine: str, t: QueueTableStats, *col: str) -> str:
    parts = (*col,) if col else (t.schema, t.table)
    return pg_ident_text(*parts) if engine == "postgresql" else my_ident(*parts)


def _role(t: QueueTableStats, role: str) -> str | None:
    return dict(t.roles).get(role)


def _where(engine: str, t: QueueTableStats, state: str) -> str:
    """A WHERE clause for people (the fix), from the roles: how this table says `state`."""
    values = [v for v, s in t.statuses if s == state]
    status = _role(t, "status")
    if status and values:
        quoted = ", ".join("'" + v.replace("'", "''") + "'" for v in values[:6])
        return f"{_ident(engine, t, status)} IN ({quoted})"
    claim = _role(t, "claimed_at") or _role(t, "claimed_by")
    if state == "running" and claim:
        return f"{_ident(engine, t, claim)} IS NOT NULL"
    if state == "waiting" and claim:
        return f"{_ident(engine, t, claim)} IS NULL"
    if state == "failed" and _role(t, "failed_at"):
        return f"{_ident(engine, t, str(_role(t, 'failed_at')))} IS NOT NULL"
    return "<the rows in this state>"


def fix(t: QueueTableStats, rule: str, engine: str) -> str:
    """The fix in terms of the table: what to look at, with its own columns."""
    table = _ident(engine, t)
    queue = _role(t, "queue")
    grp = f"{_ident(engine, t, queue)}, " if queue else ""
    run = _role(t, "runnable_at") or _role(t, "created_at")
    if rule == "backlog":
        oldest = f", min({_ident(engine, t, run)})" if run else ""
        return (
            f"Jobs wait in {table} and nothing takes them: check the workers that claim from "
            f"this table are running and not all stuck (their process manager, their logs). "
            f"Look: SELECT {grp}count(*){oldest} FROM {table} WHERE {_where(engine, t, 'waiting')}"
            f"{' GROUP BY ' + _ident(engine, t, queue) if queue else ''}; add workers only when "
            "the database is healthy (PG201/PG202, MY101/MY102 on this target)."
        )
    if rule == "expired":
        claim = _role(t, "claimed_by") or _role(t, "claimed_at") or _role(t, "heartbeat")
        who = f" ({_ident(engine, t, claim)} names the claim)" if claim else ""
        return (
            f"These rows of {table} were claimed{who} and their worker stopped working on them: "
            "find whether that worker is alive; if it is gone, give the jobs back the way the "
            "application's library does (its rescue/reaper, or clearing the claim columns of "
            f"those rows: {_where(engine, t, 'running')}). Make jobs idempotent, since they run "
            "again, and give workers a timeout below the claim's."
        )
    if rule == "attempts":
        err = _role(t, "error")
        read = f" and read {_ident(engine, t, err)}" if err else ""
        return (
            f"Jobs of {table} are being retried: group them by job type{read} to find the "
            "failing code; the retry limit "
            + (
                f"({_ident(engine, t, str(_role(t, 'max_attempts')))}) "
                if _role(t, "max_attempts")
                else ""
            )
            + "bounds how long they keep failing."
        )
    err = _role(t, "error")
    cols = f"{_ident(engine, t, err)}, " if err else ""
    return (
        f"Read the failures: SELECT {grp}{cols}count(*) FROM {table} WHERE "
        f"{_where(engine, t, 'failed')} GROUP BY {grp}{cols.rstrip(', ') or '1'}; fix the job, "
        "then retry the rows the way the application's library does."
    )


def expired_claims(ctx: CheckContext, t: QueueTableStats) -> Iterator[Finding]:
    """QU002 for a generic table: claimed rows past their own lease (locked-until), else past
    the row's timeout column, else a stale heartbeat (heartbeat_timeout), else a claim older
    than claim_timeout — the table holds no library's setting, the evidence says which."""
    claim_limit = ctx.duration("claim_timeout")
    hb_limit = ctx.duration("heartbeat_timeout")
    count, oldest, sources = 0, 0.0, set[str]()
    queues: dict[str, int] = {}
    for row in t.reserved or ():
        if row.lease_overdue is not None:
            stuck, source = (
                row.lease_overdue >= 0,
                f"its own lease ({_role(t, 'claim_expires_at')}) passed",
            )
        elif row.expires_after is not None:
            stuck = row.reserved_seconds >= row.expires_after
            source = f"the row's own timeout ({_role(t, 'timeout')})"
        elif row.heartbeat:
            stuck = row.reserved_seconds >= hb_limit
            source = f"heartbeat ({_role(t, 'heartbeat')}) older than heartbeat_timeout {format_duration(hb_limit)}"
        else:
            stuck = row.reserved_seconds >= claim_limit
            col = _role(t, "claimed_at") or _role(t, "updated_at")
            source = f"claimed ({col}) longer than claim_timeout {format_duration(claim_limit)}"
        if not stuck:
            continue
        count += row.n
        queues[str(row.queue)] = queues.get(str(row.queue), 0) + row.n
        oldest = max(oldest, row.reserved_seconds)
        sources.add(source)
    sev = ctx.grade(count) if count else None
    if sev is None:
        return
    ev = {
        "table": t.name,
        "library": GENERIC,
        "rows_estimate": t.rows_estimate,
        "count": count,
        "count_is_lower_bound": len(t.reserved or ()) >= t.groups,
        "queues": dict(sorted(queues.items())),
        "oldest": format_duration(oldest),
        "oldest_seconds": int(oldest),
        "stuck_by": sorted(sources),
    } | evidence(t)
    yield ctx.finding(
        severity=sev,
        subject=f"table {t.name}",
        evidence=ev,
        summary=(
            f"{t.name}: {count} jobs claimed and not finished past their limit — "
            f"{'; '.join(sorted(sources))} (oldest {format_duration(oldest)}); their worker "
            "is likely gone"
        ),
        fix=fix(t, "expired", ctx.snapshot.engine),
        identity=[t.schema, t.table],
    )
