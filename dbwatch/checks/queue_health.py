"""QU001–QU004: queue health read from the queue tables (backlog, expired reservations,
repeated attempts, failed jobs), over the typed rows of the pg.queues / my.queues probes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import field
from typing import Literal

from ..durations import format_duration, parse_count, parse_duration
from ..findings import Finding
from ..frozen import frozen, mutable
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
from ..snapshot.queues import FAILURE_BUCKETS, QueueStats, QueueTableStats, queues_key
from ..targets.quoting import my_ident, pg_ident_text
from . import CheckContext, check, pure
from . import queue_generic as generic

SECTIONS = {"postgresql": ["pg.queues"], "mysql": ["my.queues"]}
# The probe counts failures in fixed windows; the rule's window picks the smallest that
# covers it.
BUCKETS = FAILURE_BUCKETS
MAX_FAILURE_FINDINGS = 10  # per table: the largest groups
_RANK = {None: 0, "warning": 1, "critical": 2}


def _section(ctx: CheckContext) -> QueueStats:
    return ctx.snapshot.get(queues_key(ctx.snapshot.engine)) or QueueStats()


def _tables(ctx: CheckContext) -> tuple[QueueTableStats, ...]:
    return _section(ctx).tables


def _base(t: QueueTableStats) -> dict[str, object]:
    out: dict[str, object] = {
        "table": t.name,
        "library": t.library,
        "rows_estimate": t.rows_estimate,
    }
    if t.variant:
        out["client"] = t.variant  # read from the table (Oban: errors jsonb[] / jsonb)
    if generic.is_generic(t):
        out |= generic.evidence(t)
    if t.read:  # pg-boss 10/11: how the active and failed jobs were read (slices, pages)
        out["read"] = dict(t.read)
    return out


def _words(t: QueueTableStats) -> dict[str, str]:
    """The library's words for the client/version the table came from (empty: its defaults)."""
    lib = library(t.library)
    return lib.variant_words.get(t.variant or "", {}) if lib is not None else {}


@frozen
class _Window:
    """How much of the table the probe's window of oldest rows covered."""

    rows: int
    capped: bool

    def evidence(self) -> dict[str, object]:
        return {"window_rows": self.rows, "window_capped": self.capped}


def _claimed_apart(t: QueueTableStats) -> dict[str, int] | None:
    """Claimed jobs per queue from the reserved rows, where the summary does not read them
    (its reserved is None: pg-boss 10/11, whose claimed jobs only a scan finds, read once;
    with no waiting job its summary is empty, and 12's then had no claimed job to count);
    None where the summary counts them itself."""
    if any(r.reserved is not None for r in t.summary or ()):
        return None
    if not t.summary and t.kind != "pg_boss":
        return None
    if t.reserved is None:  # its query failed too: unknown, not zero
        return None
    out: dict[str, int] = defaultdict(int)
    for row in t.reserved:
        out[str(row.queue)] += row.n
    return out


def _unfinished(t: QueueTableStats) -> dict[str, int]:
    """Waiting and claimed jobs per queue over the window (the summary's totals, with the
    claimed jobs of the reserved rows where the summary leaves them out)."""
    out = {str(r.queue): r.total for r in t.summary or ()}
    for queue, n in (_claimed_apart(t) or {}).items():
        out[queue] = out.get(queue, 0) + n
    return out


def _window_note(t: QueueTableStats) -> _Window:
    total = sum(_unfinished(t).values())
    return _Window(total, total >= t.window > 0 or t.window_capped_ids)


def _counted(n: int, lower_bound: bool) -> str:
    """A count as a summary says it: "at least N" when more may lie past what was read."""
    return f"at least {n}" if lower_bound else str(n)


def _worse(a: str | None, b: str | None) -> str | None:
    return a if _RANK[a] >= _RANK[b] else b


def _param(ctx: CheckContext, name: str) -> str | float | None:
    """An optional threshold parameter (None: not set)."""
    params: Mapping[str, object] = ctx.params
    value = params.get(name)
    return value if isinstance(value, (str, int, float)) else None


def _grade_count(
    value: float, warning: str | float | None, critical: str | float | None
) -> str | None:
    if critical is not None and value >= parse_count(critical):
        return "critical"
    if warning is not None and value >= parse_count(warning):
        return "warning"
    return None


@pure()
@check("queue_backlog", **SECTIONS)
def queue_backlog(ctx: CheckContext) -> Iterator[Finding]:
    for t in _tables(ctx):
        if t.summary is None:
            continue
        note = _window_note(t)
        claimed = _claimed_apart(t)
        # graphile-worker: jobs behind a named-queue lock stay a backlog until the lock is old
        # enough for its own finding (QU002 queue_lock_warning = this rule's handover), then
        # move to it: the backlog thresholds hold at every moment.
        handover = ctx.duration("queue_lock_handover")
        locks = {str(r.queue): r for r in t.locks or ()}
        for row in t.summary:
            lock = locks.get(str(row.queue))
            if lock is not None and lock.locked_seconds >= handover:
                continue  # QU002 reports the lock itself, with these jobs
            depth = row.available
            age = row.oldest_available_seconds
            if depth <= 0 or age is None:
                continue
            shown = depth
            if note.capped and t.rows_estimate and note.rows and t.scale_depth:
                shown = max(depth, round(depth / note.rows * t.rows_estimate))
            sev = _worse(
                _grade_age(ctx, t, age),
                _grade_count(shown, ctx.count("depth_warning"), ctx.count("depth_critical")),
            )
            if sev is None:
                continue
            reserved = row.reserved
            if reserved is None and claimed is not None:
                reserved = claimed.get(str(row.queue), 0)
            ev = (
                _base(t)
                | note.evidence()
                | {
                    "queue": row.queue,
                    "depth": shown,
                    "depth_is_estimate": shown != depth,
                    "age": format_duration(age),
                    "age_seconds": int(age),
                    "reserved": reserved,
                }
            )
            if row.reserved is None and len(t.reserved or ()) >= t.groups:
                ev["reserved_is_lower_bound"] = True  # the reserved rows stopped at groups
            if lock is not None:
                ev["behind_lock"] = {
                    "worker": " ".join((lock.worker or "?").split())[:200],
                    "locked_seconds": int(lock.locked_seconds),
                    "lock_finding_after_seconds": int(handover),
                }
            # a full window not scaled (the table's estimate is not the queue): a lower bound
            lower = note.capped and shown == depth
            ev["depth_is_lower_bound"] = lower
            depth_txt = f"~{shown}" if shown != depth else _counted(shown, lower)
            summary = ctx.summary(**(ev | {"depth": depth_txt}))
            if t.kind == "laravel_batches":
                summary = (
                    f"{t.name}: batches named {row.queue} still have {shown} "
                    f"jobs to run, the oldest batch started {format_duration(age)} ago"
                )
            yield ctx.finding(
                severity=sev,
                subject=f"queue {t.name}:{row.queue}",
                evidence=ev,
                summary=summary,
                fix=_own_fix(
                    t,
                    "backlog",
                    ctx.snapshot.engine,
                    None if t.kind == "laravel_batches" else row.queue,
                ),
                identity=[t.schema, t.table, row.queue],
            )


def _grade_age(ctx: CheckContext, t: QueueTableStats, age: float) -> str | None:
    """A batch runs for as long as its jobs take: its age has its own, longer thresholds."""
    if t.kind != "laravel_batches":
        return ctx.grade(age)
    for sev in ("critical", "warning"):
        limit = _param(ctx, f"batch_{sev}")
        if limit is not None and age >= parse_duration(limit):
            return sev
    return None


def _retry_after(ctx: CheckContext) -> tuple[float, str]:
    target = _section(ctx).retry_after
    if target:
        return target, "target retry_after"
    return ctx.duration("retry_after"), "rule parameter retry_after"


def _own_fix(
    t: QueueTableStats,
    rule: Literal["backlog", "expired", "attempts"],
    engine: str,
    queue: object = None,
) -> str | None:
    """A library's own words for a finding, or the table's for a generic one (None: the
    rule's fix); a backlog's names its queue where the library says how (Laravel's
    queue:monitor)."""
    if generic.is_generic(t):
        return generic.fix(t, rule, engine)
    lib = library(t.library)
    if lib is None:
        return None
    if _words(t).get(rule):
        return _words(t)[rule]
    if rule == "backlog" and lib.backlog_text is not None:
        return lib.backlog_text(None if queue is None else str(queue))
    text = {"backlog": lib.backlog_fix, "expired": lib.expired_fix, "attempts": lib.attempts_fix}
    return text[rule] or None


def _ident(engine: str, t: QueueTableStats) -> str:
    """schema.table quoted as the probe's queries quote it (names are data, also in fixes)."""
    parts = (t.schema, t.table)
    return pg_ident_text(*parts) if engine == "postgresql" else my_ident(*parts)


def _expired_fix(t: QueueTableStats, retry_after: float, engine: str) -> str:
    own = _own_fix(t, "expired", engine)
    if own:
        return own
    now = "extract(epoch FROM now())" if engine == "postgresql" else "UNIX_TIMESTAMP()"
    look = ""
    if t.kind == "laravel_jobs":
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


@pure()
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
    for t in _tables(ctx):
        for row in t.locks or ():
            age = row.locked_seconds
            sev = "critical" if age >= crit else "warning" if age >= warn else None
            if sev is None:
                continue
            worker = " ".join((row.worker or "?").split())[:200]
            locked = format_duration(age)
            ev = _base(t) | {
                "queue": row.queue,
                "worker": worker,
                "locked": locked,
                "locked_seconds": int(age),
                "waiting": row.waiting,
                "held_jobs": row.held_jobs,
                # counted among the newest jobs by id (no index holds locked jobs): a bound
                "held_jobs_window": t.window,
                "released_by_library_after": "4h",
            }
            yield ctx.finding(
                severity=sev,
                subject=f"queue lock {t.name}:{row.queue}",
                evidence=ev,
                summary=(
                    f"{t.name}: named queue {row.queue} locked by worker {worker} "
                    f"for {locked}; {row.waiting} jobs wait behind it and no other "
                    "worker runs them until that worker unlocks it (graphile-worker frees "
                    "the lock only after 4 h)"
                ),
                fix=(
                    f"If worker {worker} is gone (crashed, killed, deployed away): SELECT "
                    f"graphile_worker.force_unlock_workers(ARRAY[{_literal(worker)}]); "
                    "frees its queue and jobs at once; stop workers gracefully (SIGTERM) so "
                    "they release their locks."
                ),
                identity=[t.schema, t.table, row.queue, worker],
            )


def _expired_claims(ctx: CheckContext) -> Iterator[Finding]:
    retry_after, source = _retry_after(ctx)
    for t in _tables(ctx):
        if t.reserved is None:
            continue
        if generic.is_generic(t):
            yield from generic.expired_claims(ctx, t)
            continue
        queues: dict[str, int] = defaultdict(int)
        oldest, limits, heartbeat, gone = 0.0, set[float](), False, 0
        for row in t.reserved:
            # the library's own expiry (per job for pg-boss), else Laravel's retry_after
            expiry = retry_after if row.expires_after is None else row.expires_after
            if row.reserved_seconds >= expiry:
                heartbeat = heartbeat or row.heartbeat
                queues[str(row.queue)] += row.n
                oldest = max(oldest, row.reserved_seconds)
                if expiry > 0:
                    limits.add(expiry)
                else:  # an expiry of 0: the claim's owner is gone (procrastinate: pruned)
                    gone += row.n
        expiry = min(limits, default=0 if gone else retry_after)
        count = sum(queues.values())
        sev = ctx.grade(count) if count else None
        if sev is None:
            continue
        capped = len(t.reserved) >= t.groups or _window_note(t).capped
        shown = format_duration(expiry)
        ev = _base(t) | {
            "count": count,
            "count_is_lower_bound": capped,
            "queues": dict(sorted(queues.items())),
            "oldest": format_duration(oldest),
            "oldest_seconds": int(oldest),
            "retry_after": shown,
            "retry_after_seconds": expiry,
            "retry_after_source": source if t.kind == "laravel_jobs" else _expiry_source(t),
            "heartbeat": heartbeat,
            "worker_gone": gone,
        }
        # the claimed rows stopped at `groups` or the window was full: more may be expired
        said = _counted(count, capped)
        summary = ctx.summary(**(ev | {"count": said})) if capped else None
        lib = library(t.library)
        if lib is not None and lib.expired_note:
            what, then = lib.expired_note
            if heartbeat:
                what = "active jobs whose heartbeat is older than their heartbeatSeconds of"
                then = "pg-boss fails them (job heartbeat timeout): their worker is gone"
            aged = f"{what} {shown} (oldest {format_duration(oldest)})"
            if gone == count and lib.gone_note:
                summary = f"{t.name}: {said} {lib.gone_note}; {then}"  # no age to show
            elif gone and lib.gone_note:
                both = f"{_counted(count - gone, capped)} {aged} and {gone} {lib.gone_note}"
                summary = f"{t.name}: {both}; {then}"
            else:
                summary = f"{t.name}: {said} {aged}; {then}"
        yield ctx.finding(
            severity=sev,
            subject=f"table {t.name}",
            evidence=ev,
            summary=summary,
            fix=HEARTBEAT_FIX if heartbeat else _expired_fix(t, expiry, ctx.snapshot.engine),
            identity=[t.schema, t.table],
        )


def _expiry_source(t: QueueTableStats) -> str:
    if _words(t).get("expiry_source"):
        return _words(t)["expiry_source"]
    lib = library(t.library)
    return lib.expiry_source if lib is not None else "library default"


@mutable
class _Repeated:
    """Jobs of one queue and class attempted at least min_attempts times."""

    queue: str
    job_class: str
    count: int = 0
    max_attempts: int = 0
    payload_timeout: int | None = None
    share: float | None = None  # of the queue's rows in the window

    def evidence(self) -> dict[str, object]:
        return {
            "queue": self.queue,
            "job_class": self.job_class,
            "count": self.count,
            "max_attempts": self.max_attempts,
            "payload_timeout": self.payload_timeout,
            "share": self.share,
        }


def _repeated_groups(t: QueueTableStats, min_attempts: int) -> dict[tuple[str, str], _Repeated]:
    groups: dict[tuple[str, str], _Repeated] = {}
    for row in t.repeated or ():
        if row.attempts < min_attempts:
            continue
        key = (str(row.queue), job_class(row.job_class) or "(unknown)")
        g = groups.setdefault(key, _Repeated(queue=key[0], job_class=key[1]))
        g.count += row.n
        g.max_attempts = max(g.max_attempts, row.attempts)
        timeout = payload_timeout(row.timeout_head)
        if timeout is not None:
            g.payload_timeout = max(timeout, g.payload_timeout or 0)
    return groups


def _near_limit(t: QueueTableStats, ctx: CheckContext) -> int:
    return int(t.attempts_limit or ctx.count("attempts_limit"))


@pure()
@check("queue_attempts", **SECTIONS)
def queue_attempts(ctx: CheckContext) -> Iterator[Finding]:
    min_attempts = int(ctx.count("min_attempts"))
    retry_after, _ = _retry_after(ctx)
    for t in _tables(ctx):
        if t.repeated is None:
            continue
        groups = _repeated_groups(t, min_attempts)
        count = sum(g.count for g in groups.values())
        if not count:
            continue
        per_queue = _unfinished(t)
        limit = _near_limit(t, ctx)
        near = [g for g in groups.values() if g.max_attempts >= 0.9 * limit]
        slow = [
            g
            for g in groups.values()
            if t.kind == "laravel_jobs"
            and g.payload_timeout is not None
            and g.payload_timeout >= retry_after
        ]
        for g in groups.values():
            total = per_queue.get(g.queue) or 0
            g.share = round(g.count / total, 3) if total else None
        sev = ctx.grade(count)
        if near:
            sev = "critical"
        if sev is None:
            continue
        by_class = sorted(groups.values(), key=lambda g: -g.count)[:20]
        # repeated attempts counted among fewer rows than the summary's (Solid Queue)
        bound = {"repeated_window": t.repeated_window} if t.repeated_window else {}
        ev = (
            _base(t)
            | _window_note(t).evidence()
            | bound
            | {
                "count": count,
                "min_attempts": min_attempts,
                "max_attempts": max(g.max_attempts for g in groups.values()),
                "by_class": [g.evidence() for g in by_class],
                "attempts_limit": limit,
                "near_limit": [g.job_class for g in near],
                "timeout_not_below_retry_after": [
                    {
                        "job_class": g.job_class,
                        "timeout": g.payload_timeout,
                        "retry_after": retry_after,
                    }
                    for g in slow
                ],
            }
        )
        yield ctx.finding(
            severity=sev,
            subject=f"table {t.name}",
            evidence=ev,
            summary=_attempts_summary(ctx, ev, limit, by_class, near, slow),
            fix=_own_fix(t, "attempts", ctx.snapshot.engine),
            identity=[t.schema, t.table],
        )


def _attempts_summary(
    ctx: CheckContext,
    ev: dict[str, object],
    limit: int,
    by_class: list[_Repeated],
    near: list[_Repeated],
    slow: list[_Repeated],
) -> str:
    top = by_class[0]
    share = f", {top.share:.0%} of queue {top.queue}" if top.share else ""
    text = ctx.summary(**ev) + f"; most: {top.job_class} ({top.count}{share})"
    if near:
        text += f"; {len(near)} job classes near the attempts limit {limit}"
    for g in slow[:1]:
        text += (
            f"; {g.job_class} has its own timeout {g.payload_timeout}s, not below "
            f"retry_after: it is handed to a second worker while still running"
        )
    return text


def _bucket(window: float) -> tuple[int, str]:
    for seconds, key in BUCKETS:
        if seconds >= window:
            return seconds, key
    return BUCKETS[-1]


@mutable
class _Failures:
    """Failures of one exception and job class in a table, over the rule's window."""

    exception: str
    kind: str
    job_class: str
    message: str  # the first error text seen, one line
    count: int = 0
    queues: set[str] = field(default_factory=set)
    variants: set[str] = field(default_factory=set)
    latest: str | None = None
    latest_seconds_ago: int | None = None
    untimed: int = 0  # generic tables: failed rows with no time of failure

    def evidence(self) -> dict[str, object]:
        return {
            "untimed": self.untimed,
            "exception": self.exception,
            "kind": self.kind,
            "job_class": self.job_class,
            "count": self.count,
            "queues": sorted(self.queues),
            "variants": sorted(self.variants),
            "latest": self.latest,
            "latest_seconds_ago": self.latest_seconds_ago,
            "message": self.message,
        }


def _failure_groups(t: QueueTableStats, key: str) -> list[_Failures]:
    groups: dict[tuple[str, str], _Failures] = {}
    lib = library(t.library)
    own = lib.failure_texts if lib is not None else ()
    for row in t.failed or ():
        n = row.count(key)
        if n <= 0:
            continue
        head, raw_class = row.head, row.job_class
        if t.kind == "symfony_messenger":
            head, raw_class = error_head(head), message_class(raw_class)
        f = classify_failure(head, own)
        cls = job_class(raw_class) or "(unknown)"
        g = groups.setdefault(
            (f.exception, cls),
            _Failures(
                exception=f.exception,
                kind=f.kind,
                job_class=cls,
                message=" ".join((head or "").split())[:300],
            ),
        )
        g.count += n
        g.untimed += row.untimed
        g.queues.add(str(row.queue))
        if f.variant:
            g.variants.add(f.variant)
        ago = row.latest_seconds_ago
        if ago is not None and (g.latest_seconds_ago is None or ago < g.latest_seconds_ago):
            g.latest_seconds_ago, g.latest = int(ago), row.latest
    return sorted(groups.values(), key=lambda g: (-g.count, g.exception, g.job_class))


def _short(name: str) -> str:
    return name.rsplit("\\", 1)[-1]


@pure()
@check("queue_failed", **SECTIONS)
def queue_failed(ctx: CheckContext) -> Iterator[Finding]:
    window, key = _bucket(ctx.duration("window"))
    for t in _tables(ctx):
        if t.failed is None:
            continue
        groups = _failure_groups(t, key)
        capped = len(t.failed) >= t.groups
        # every row of the newest-rows window is a failure in the horizon: there may be more
        full = sum(r.n for r in t.failed) >= t.failed_window > 0
        for g in groups[:MAX_FAILURE_FINDINGS]:
            sev = ctx.grade(g.count)
            if sev is None:
                continue
            meaning = failure_meaning(t.library, g.kind)
            ev = (
                _base(t)
                | g.evidence()
                | {
                    "window": format_duration(window),
                    "window_seconds": window,
                    "job": g.job_class,
                    "meaning": meaning,
                    "groups": len(groups),
                    "groups_capped": capped,
                    "count_is_lower_bound": full,
                    "latest_ago": format_duration(g.latest_seconds_ago),
                }
            )
            yield ctx.finding(
                severity=sev,
                evidence=ev,
                summary=_failed_summary(ctx, t, g, window, meaning, full),
                fix=(
                    generic.fix(t, "failure", ctx.snapshot.engine)
                    if generic.is_generic(t)
                    else _words(t).get("failure") or failure_fix(t.library, g.kind)
                ),
                subject=f"failed {t.name}: {_short(g.exception)} {g.job_class}",
                identity=[t.schema, t.table, g.exception, g.job_class],
            )


def _failed_summary(
    ctx: CheckContext, t: QueueTableStats, g: _Failures, window: int, meaning: str, full: bool
) -> str:
    """`full`: the newest-failures window was full, so each count is a lower bound (said)."""
    count = _counted(g.count, full)
    ago = format_duration(g.latest_seconds_ago)
    when = f"in the last {format_duration(window)} (latest {g.latest}, {ago} ago)"
    if g.kind == "batch":
        return (
            f"{t.name}: batches named {g.job_class} have {count} failed jobs "
            f"{when}: {failure_meaning('laravel', 'batch').split(':')[1].strip()}"
        )
    # graphile-worker and others keep only the message: show it instead of a class
    cause = f'"{g.message[:80]}"' if g.exception == "(unknown)" else _short(g.exception)
    text = ctx.summary(
        table=t.name,
        count=count,
        job=g.job_class,
        exception=cause,
        window=format_duration(window),
        latest=f"{g.latest}, {ago} ago",
    )
    if g.kind != "other":
        text += f": {meaning.split(':')[0].split(' (')[0]}"
    return text
