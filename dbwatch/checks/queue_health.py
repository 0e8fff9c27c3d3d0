"""QU001–QU004: queue health read from the queue tables (backlog, expired reservations,
repeated attempts, failed jobs), over the normalised rows of the pg.queues / my.queues probes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from ..durations import format_duration, parse_count, parse_duration
from ..findings import Finding
from ..queues import (
    classify_failure,
    failure_fix,
    failure_meaning,
    job_class,
    library,
    payload_timeout,
)
from ..queues.pg_boss import HEARTBEAT_FIX
from ..queues.symfony_messenger import error_head, message_class
from ..targets.quoting import my_ident, pg_ident_text
from . import CheckContext, check

SECTIONS = {"postgresql": ["pg.queues"], "mysql": ["my.queues"]}
# The probe counts failures in these fixed windows; the rule's window picks the smallest that
# covers it.
BUCKETS = ((3600, "n_1h"), (21600, "n_6h"), (86400, "n_24h"), (259200, "n_3d"), (604800, "n_7d"))
MAX_FAILURE_FINDINGS = 10  # per table: the largest groups
_RANK = {None: 0, "warning": 1, "critical": 2}


def _tables(ctx: CheckContext, aspect: str) -> Iterator[dict[str, Any]]:
    name = "pg.queues" if ctx.snapshot.engine == "postgresql" else "my.queues"
    for t in ctx.snapshot.section(name).get("tables", []):
        if t.get(aspect) is not None:
            yield t


def _section(ctx: CheckContext) -> dict[str, Any]:
    name = "pg.queues" if ctx.snapshot.engine == "postgresql" else "my.queues"
    data: dict[str, Any] = ctx.snapshot.section(name)
    return data


def _base(t: dict[str, Any]) -> dict[str, Any]:
    ev = {
        "table": f"{t['schema']}.{t['table']}",
        "library": t.get("library"),
        "rows_estimate": t.get("rows_estimate"),
    }
    return ev


def _window_note(t: dict[str, Any]) -> dict[str, Any]:
    total = sum(int(r.get("total") or 0) for r in t.get("summary") or [])
    capped = total >= int(t.get("window") or 0) > 0 or bool(t.get("window_capped_ids"))
    return {"window_rows": total, "window_capped": capped}


def _worse(a: str | None, b: str | None) -> str | None:
    return a if _RANK[a] >= _RANK[b] else b


def _grade_count(value: float, warning: Any, critical: Any) -> str | None:
    if critical is not None and value >= parse_count(critical):
        return "critical"
    if warning is not None and value >= parse_count(warning):
        return "warning"
    return None


@check("queue_backlog", **SECTIONS)
def queue_backlog(ctx: CheckContext) -> Iterator[Finding]:
    for t in _tables(ctx, "summary"):
        note = _window_note(t)
        locked = {str(r.get("queue")) for r in t.get("locks") or []}
        for row in t["summary"]:
            if str(row.get("queue")) in locked:
                continue  # jobs behind a named-queue lock: QU002 reports the lock itself
            depth = int(row.get("available") or 0)
            age = row.get("oldest_available_seconds")
            if depth <= 0 or age is None:
                continue
            shown = depth
            if (
                note["window_capped"]
                and t.get("rows_estimate")
                and note["window_rows"]
                and t.get("scale_depth", True)
            ):
                shown = max(depth, round(depth / note["window_rows"] * t["rows_estimate"]))
            sev = _worse(
                _grade_age(ctx, t, float(age)),
                _grade_count(shown, ctx.count("depth_warning"), ctx.count("depth_critical")),
            )
            if sev is None:
                continue
            ev = (
                _base(t)
                | note
                | {
                    "queue": row.get("queue"),
                    "depth": shown,
                    "depth_is_estimate": shown != depth,
                    "age": format_duration(float(age)),
                    "age_seconds": int(age),
                    "reserved": int(row.get("reserved") or 0),
                }
            )
            depth_txt = f"~{shown}" if shown != depth else str(shown)
            summary = ctx.summary(**(ev | {"depth": depth_txt}))
            if t["kind"] == "laravel_batches":
                summary = (
                    f"{ev['table']}: batches named {row.get('queue')} still have {shown} "
                    f"jobs to run, the oldest batch started {ev['age']} ago"
                )
            yield ctx.finding(
                severity=sev,
                subject=f"queue {ev['table']}:{row.get('queue')}",
                evidence=ev,
                summary=summary,
                fix=_lib_text(t, "backlog_fix"),
                identity=[t["schema"], t["table"], row.get("queue")],
            )


def _grade_age(ctx: CheckContext, t: dict[str, Any], age: float) -> str | None:
    """A batch runs for as long as its jobs take: its age has its own, longer thresholds."""
    if t["kind"] != "laravel_batches":
        return ctx.grade(age)
    for sev in ("critical", "warning"):
        limit = ctx.params.get(f"batch_{sev}")
        if limit is not None and age >= parse_duration(limit):
            return sev
    return None


def _retry_after(ctx: CheckContext) -> tuple[float, str]:
    target = _section(ctx).get("retry_after")
    if target:
        return float(target), "target retry_after"
    return ctx.duration("retry_after"), "rule parameter retry_after"


def _lib_text(t: dict[str, Any], attr: str) -> str | None:
    """A library's own words for a finding (None: the rule's generic fix)."""
    lib = library(t.get("library"))
    text = getattr(lib, attr, None) if lib is not None else None
    return str(text) if text else None


def _ident(engine: str, t: dict[str, Any]) -> str:
    """schema.table quoted as the probe's queries quote it (names are data, also in fixes)."""
    parts = (str(t["schema"]), str(t["table"]))
    return pg_ident_text(*parts) if engine == "postgresql" else my_ident(*parts)


def _expired_fix(t: dict[str, Any], retry_after: float, engine: str) -> str:
    own = _lib_text(t, "expired_fix")
    if own:
        return own
    now = "extract(epoch FROM now())" if engine == "postgresql" else "UNIX_TIMESTAMP()"
    look = ""
    if t["kind"] == "laravel_jobs":
        look = (
            f" Look: SELECT id, queue, attempts, reserved_at FROM {_ident(engine, t)} "
            f"WHERE reserved_at <= {now} - {int(retry_after)} ORDER BY id LIMIT 20;"
        )
    return (
        f"Make the worker give up first: --timeout (or the job's $timeout) several seconds "
        f"below retry_after ({format_duration(retry_after)}), and retry_after above the "
        "slowest job; look for killed workers (OOM: dmesg | grep -i oom; deploys without "
        "queue:restart) and deletes rolled back by deadlocks (MY102, QU401); make jobs "
        "idempotent, since these run again." + look
    )


@check("queue_expired", **SECTIONS)
def queue_expired(ctx: CheckContext) -> Iterator[Finding]:
    yield from _queue_locks(ctx)
    yield from _expired_claims(ctx)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _queue_locks(ctx: CheckContext) -> Iterator[Finding]:
    """graphile-worker: a named queue locked by a worker runs none of its jobs until that
    worker unlocks it (or 4 h pass): its own finding, not a backlog to add workers to."""
    warn = ctx.duration("queue_lock_warning")
    crit = ctx.duration("queue_lock_critical")
    for t in _tables(ctx, "locks"):
        for row in t["locks"]:
            age = float(row.get("locked_seconds") or 0)
            sev = "critical" if age >= crit else "warning" if age >= warn else None
            if sev is None:
                continue
            worker = " ".join(str(row.get("worker") or "?").split())[:200]
            ev = _base(t) | {
                "queue": row.get("queue"),
                "worker": worker,
                "locked": format_duration(age),
                "locked_seconds": int(age),
                "waiting": int(row.get("waiting") or 0),
                "held_jobs": int(row.get("held_jobs") or 0),
                "released_by_library_after": "4h",
            }
            yield ctx.finding(
                severity=sev,
                subject=f"queue lock {ev['table']}:{row.get('queue')}",
                evidence=ev,
                summary=(
                    f"{ev['table']}: named queue {row.get('queue')} locked by worker {worker} "
                    f"for {ev['locked']}; {ev['waiting']} jobs wait behind it and no other "
                    "worker runs them until that worker unlocks it (graphile-worker frees "
                    "the lock only after 4 h)"
                ),
                fix=(
                    f"If worker {worker} is gone (crashed, killed, deployed away): SELECT "
                    f"graphile_worker.force_unlock_workers(ARRAY[{_literal(worker)}]); "
                    "frees its queue and jobs at once; stop workers gracefully (SIGTERM) so "
                    "they release their locks."
                ),
                identity=[t["schema"], t["table"], row.get("queue"), worker],
            )


def _expired_claims(ctx: CheckContext) -> Iterator[Finding]:
    retry_after, source = _retry_after(ctx)
    for t in _tables(ctx, "reserved"):
        queues: dict[str, int] = defaultdict(int)
        oldest, limits, heartbeat = 0.0, set(), False
        for row in t["reserved"]:
            # the library's own expiry (per job for pg-boss), else Laravel's retry_after
            limit = row.get("expires_after")
            expiry = retry_after if limit is None else float(limit)
            seconds = float(row.get("reserved_seconds") or 0)
            if seconds >= expiry:
                heartbeat = heartbeat or bool(row.get("heartbeat"))
                queues[str(row.get("queue"))] += int(row.get("n") or 0)
                oldest = max(oldest, seconds)
                limits.add(expiry)
        expiry = min(limits, default=retry_after)
        count = sum(queues.values())
        sev = ctx.grade(count) if count else None
        if sev is None:
            continue
        capped = len(t["reserved"]) >= int(t.get("groups") or 0) or _window_note(t)["window_capped"]
        ev = _base(t) | {
            "count": count,
            "count_is_lower_bound": capped,
            "queues": dict(sorted(queues.items())),
            "oldest": format_duration(oldest),
            "oldest_seconds": int(oldest),
            "retry_after": format_duration(expiry),
            "retry_after_seconds": expiry,
            "retry_after_source": source if t["kind"] == "laravel_jobs" else _expiry_source(t),
            "heartbeat": heartbeat,
        }
        summary = None
        lib = library(t.get("library"))
        if lib is not None and lib.expired_note:
            what, then = lib.expired_note
            if heartbeat:
                what = "active jobs whose heartbeat is older than their heartbeatSeconds of"
                then = "pg-boss fails them (job heartbeat timeout): their worker is gone"
            summary = (
                f"{ev['table']}: {count} {what} {ev['retry_after']} (oldest {ev['oldest']}); {then}"
            )
        yield ctx.finding(
            severity=sev,
            subject=f"table {ev['table']}",
            evidence=ev,
            summary=summary,
            fix=HEARTBEAT_FIX if heartbeat else _expired_fix(t, expiry, ctx.snapshot.engine),
            identity=[t["schema"], t["table"]],
        )


def _expiry_source(t: dict[str, Any]) -> str:
    lib = library(t.get("library"))
    return lib.expiry_source if lib is not None else "library default"


def _repeated_groups(t: dict[str, Any], min_attempts: int) -> dict[tuple[str, str], dict[str, Any]]:
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for row in t["repeated"]:
        attempts = int(row.get("attempts") or 0)
        if attempts < min_attempts:
            continue
        key = (str(row.get("queue")), job_class(row.get("job_class")) or "(unknown)")
        g = groups.setdefault(
            key,
            {
                "queue": key[0],
                "job_class": key[1],
                "count": 0,
                "max_attempts": 0,
                "payload_timeout": None,
            },
        )
        g["count"] += int(row.get("n") or 0)
        g["max_attempts"] = max(g["max_attempts"], attempts)
        timeout = payload_timeout(row.get("timeout_head"))
        if timeout is not None:
            g["payload_timeout"] = max(timeout, g["payload_timeout"] or 0)
    return groups


def _near_limit(t: dict[str, Any], ctx: CheckContext) -> int:
    limit = t.get("attempts_limit") or int(ctx.count("attempts_limit"))
    return int(limit)


@check("queue_attempts", **SECTIONS)
def queue_attempts(ctx: CheckContext) -> Iterator[Finding]:
    min_attempts = int(ctx.count("min_attempts"))
    retry_after, _ = _retry_after(ctx)
    for t in _tables(ctx, "repeated"):
        groups = _repeated_groups(t, min_attempts)
        count = sum(g["count"] for g in groups.values())
        if not count:
            continue
        per_queue = {str(r.get("queue")): int(r.get("total") or 0) for r in t.get("summary") or []}
        limit = _near_limit(t, ctx)
        near = [g for g in groups.values() if g["max_attempts"] >= 0.9 * limit]
        slow = [
            g
            for g in groups.values()
            if t["kind"] == "laravel_jobs"
            and g["payload_timeout"] is not None
            and g["payload_timeout"] >= retry_after
        ]
        for g in groups.values():
            total = per_queue.get(g["queue"]) or 0
            g["share"] = round(g["count"] / total, 3) if total else None
        sev = ctx.grade(count)
        if near:
            sev = "critical"
        if sev is None:
            continue
        by_class = sorted(groups.values(), key=lambda g: -g["count"])[:20]
        ev = (
            _base(t)
            | _window_note(t)
            | {
                "count": count,
                "min_attempts": min_attempts,
                "max_attempts": max(g["max_attempts"] for g in groups.values()),
                "by_class": by_class,
                "attempts_limit": limit,
                "near_limit": [g["job_class"] for g in near],
                "timeout_not_below_retry_after": [
                    {
                        "job_class": g["job_class"],
                        "timeout": g["payload_timeout"],
                        "retry_after": retry_after,
                    }
                    for g in slow
                ],
            }
        )
        yield ctx.finding(
            severity=sev,
            subject=f"table {ev['table']}",
            evidence=ev,
            summary=_attempts_summary(ctx, ev, by_class, near, slow),
            fix=_lib_text(t, "attempts_fix"),
            identity=[t["schema"], t["table"]],
        )


def _attempts_summary(
    ctx: CheckContext,
    ev: dict[str, Any],
    by_class: list[dict[str, Any]],
    near: list[dict[str, Any]],
    slow: list[dict[str, Any]],
) -> str:
    top = by_class[0]
    share = f", {top['share']:.0%} of queue {top['queue']}" if top.get("share") else ""
    text = ctx.summary(**ev) + f"; most: {top['job_class']} ({top['count']}{share})"
    if near:
        text += f"; {len(near)} job classes near the attempts limit {ev['attempts_limit']}"
    for g in slow[:1]:
        text += (
            f"; {g['job_class']} has its own timeout {g['payload_timeout']}s, not below "
            f"retry_after: it is handed to a second worker while still running"
        )
    return text


def _bucket(window: float) -> tuple[int, str]:
    for seconds, key in BUCKETS:
        if seconds >= window:
            return seconds, key
    return BUCKETS[-1]


def _failure_groups(t: dict[str, Any], key: str) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    lib = library(t.get("library"))
    own = lib.failure_texts if lib is not None else ()
    for row in t["failed"]:
        n = int(row.get(key) or 0)
        if n <= 0:
            continue
        head, raw_class = row.get("head"), row.get("job_class")
        if t["kind"] == "symfony_messenger":
            head, raw_class = error_head(head), message_class(raw_class)
            row = dict(row, head=head)
        f = classify_failure(head, own)
        cls = job_class(raw_class) or "(unknown)"
        g = groups.setdefault(
            (f.exception, cls),
            {
                "exception": f.exception,
                "kind": f.kind,
                "job_class": cls,
                "count": 0,
                "queues": set(),
                "variants": set(),
                "latest": None,
                "latest_seconds_ago": None,
                "message": " ".join(str(row.get("head") or "").split())[:300],
            },
        )
        g["count"] += n
        g["queues"].add(str(row.get("queue")))
        if f.variant:
            g["variants"].add(f.variant)
        ago = row.get("latest_seconds_ago")
        if ago is not None and (g["latest_seconds_ago"] is None or ago < g["latest_seconds_ago"]):
            g["latest_seconds_ago"], g["latest"] = int(ago), row.get("latest")
    out = sorted(groups.values(), key=lambda g: (-g["count"], g["exception"], g["job_class"]))
    for g in out:
        g["queues"], g["variants"] = sorted(g["queues"]), sorted(g["variants"])
    return out


def _short(name: str) -> str:
    return name.rsplit("\\", 1)[-1]


@check("queue_failed", **SECTIONS)
def queue_failed(ctx: CheckContext) -> Iterator[Finding]:
    window, key = _bucket(ctx.duration("window"))
    for t in _tables(ctx, "failed"):
        groups = _failure_groups(t, key)
        capped = len(t["failed"]) >= int(t.get("groups") or 0)
        # every row of the newest-rows window is a failure in the horizon: there may be more
        full = (
            sum(int(r.get("n") or 0) for r in t["failed"]) >= int(t.get("failed_window") or 0) > 0
        )
        for g in groups[:MAX_FAILURE_FINDINGS]:
            sev = ctx.grade(g["count"])
            if sev is None:
                continue
            ev = (
                _base(t)
                | g
                | {
                    "window": format_duration(window),
                    "window_seconds": window,
                    "job": g["job_class"],
                    "meaning": failure_meaning(t.get("library"), g["kind"]),
                    "groups": len(groups),
                    "groups_capped": capped,
                    "count_is_lower_bound": full,
                    "latest_ago": format_duration(g["latest_seconds_ago"]),
                }
            )
            summary = _failed_summary(ctx, ev, g)
            yield ctx.finding(
                severity=sev,
                evidence=ev,
                summary=summary,
                fix=failure_fix(t.get("library"), g["kind"]),
                subject=f"failed {ev['table']}: {_short(g['exception'])} {g['job_class']}",
                identity=[t["schema"], t["table"], g["exception"], g["job_class"]],
            )


def _failed_summary(ctx: CheckContext, ev: dict[str, Any], g: dict[str, Any]) -> str:
    when = f"in the last {ev['window']} (latest {g['latest']}, {ev['latest_ago']} ago)"
    if g["kind"] == "batch":
        return (
            f"{ev['table']}: batches named {g['job_class']} have {g['count']} failed jobs "
            f"{when}: {failure_meaning('laravel', 'batch').split(':')[1].strip()}"
        )
    # graphile-worker and others keep only the message: show it instead of a class
    cause = f'"{g["message"][:80]}"' if g["exception"] == "(unknown)" else _short(g["exception"])
    text = ctx.summary(
        table=ev["table"],
        count=g["count"],
        job=g["job_class"],
        exception=cause,
        window=ev["window"],
        latest=f"{g['latest']}, {ev['latest_ago']} ago",
    )
    if g["kind"] != "other":
        text += f": {ev['meaning'].split(':')[0].split(' (')[0]}"
    return text
