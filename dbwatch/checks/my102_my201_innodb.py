"""MY102 new InnoDB deadlock (with its diagnosis); MY201 history list length (purge lag)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime

from ..deadlocks.record import DeadlockRecord, deadlock_record, latest_deadlock
from ..deadlocks.text import deadlock_fields, victim_text
from ..deadlocks.unshown import evidence as not_shown_evidence
from ..durations import format_duration, plural
from ..findings import Finding
from ..snapshot import Snapshot
from ..snapshot.my import (
    MY_INNODB_COUNTERS,
    MY_INNODB_STATUS,
    MY_TRX,
    InnodbCounters,
    InnodbStatusSection,
    MyThread,
)
from . import CheckContext, check, pure
from .history import has_last_point


def _ts(text: str | None) -> datetime | None:
    try:
        return datetime.strptime(str(text)[:19], "%Y-%m-%d %H:%M:%S")
    except (TypeError, ValueError):
        return None


def _age(status: InnodbStatusSection, dl: DeadlockRecord) -> float | None:
    """Seconds between the deadlock and the monitor output (both in server time)."""
    now, then = _ts(status.at), _ts(dl.at)
    if now is None or then is None:
        return None
    return max((now - then).total_seconds(), 0.0)


def _recent_deadlocks(ctx: CheckContext, counter: int | None) -> int | None:
    """Deadlocks since the previous probe, from the daemon's history of the counter."""
    state = ctx.state
    if state is None or counter is None or not hasattr(state, "history"):
        return None
    if has_last_point(state):  # one row, not a week of points for the last one
        past = state.last_point(ctx.snapshot.target, "innodb_deadlocks", 7 * 86400)
    else:
        past = state.history(ctx.snapshot.target, "innodb_deadlocks", 7 * 86400)
    return counter - int(past[-1][1]) if past else None


def _from_error_log_table(ctx: CheckContext, status: InnodbStatusSection) -> list[Finding]:
    """MySQL 8.0.22+: one MY102 per deadlock in performance_schema.error_log (recent ones)."""
    max_age = ctx.duration("max_age")
    out = []
    for rec in map(deadlock_record, status.error_log.deadlocks[-50:]):
        if not rec.in_scope(ctx.snapshot.scope):
            continue
        age = _age(status, rec)
        if age is not None and age > max_age:
            continue
        fields = deadlock_fields(
            rec, "performance_schema.error_log", "performance_schema.error_log"
        )
        fields["evidence"]["age_seconds"] = age
        out.append(ctx.finding(severity=ctx.rule.severity, **fields))
    return out


@check("innodb_deadlock", mysql=["my.innodb_status", "my.innodb_counters"])
def innodb_deadlock(ctx: CheckContext) -> Iterator[Finding]:
    status = ctx.snapshot.get(MY_INNODB_STATUS) or InnodbStatusSection()
    counters = ctx.snapshot.get(MY_INNODB_COUNTERS) or InnodbCounters()
    counter = counters.deadlocks
    scope = ctx.snapshot.scope
    from_table = _from_error_log_table(ctx, status)
    if from_table:  # every deadlock, not only the latest: the status text adds nothing
        yield from from_table
        return
    dl = latest_deadlock(ctx.snapshot)  # shared with the daemon's journal: diagnosed once
    if dl and not dl.in_scope(scope):
        return  # none of its tables is in the target's scope (the history is not read)
    since = _recent_deadlocks(ctx, counter)
    age = _age(status, dl) if dl else None
    max_age = ctx.duration("max_age")
    if not dl or (age is not None and age > max_age):
        if since and since > 0:  # the counter moved but the status text shows none of them
            yield _unseen(ctx, since, counter, scope)
        return
    diag = dl.diagnosis
    unshown = not_shown_evidence(ctx.state, ctx.snapshot.target, counter, since, 1)
    extra = (
        f"; {since} deadlocks since the last probe, {since - 1} of them not shown "
        f"(SHOW ENGINE INNODB STATUS keeps only the latest): {SEE_ALL}"
        if since and since > 1
        else _not_shown_text(unshown)
    )
    summary = (
        ctx.summary(
            at=dl.at,
            ago=format_duration(age),
            pattern=diag.pattern,
            victim=victim_text(dl),
        )
        + extra
    )
    yield ctx.finding(
        severity=ctx.rule.severity,
        subject=f"deadlock {dl.at}",
        summary=summary,
        fix=diag.fix,
        evidence={
            "deadlock": dl.to_json(),
            "diagnosis": diag.to_dict(),
            "rules": list(diag.rules),
            "deadlocks_total": counter,
            "deadlocks_since_last_probe": since,
            **unshown,
            "age_seconds": age,
        },
        identity=dl.key,
    )


SEE_ALL = (
    "to see every one, set innodb_print_all_deadlocks = ON and give the target "
    '`log_file = "<error log>"` (MySQL 8.0.22+: performance_schema.error_log)'
)


def _not_shown_text(ev: Mapping[str, object]) -> str:
    """The count the finding does not show, when the finding says nothing of it already."""
    n = ev.get("not_shown")
    if not isinstance(n, int) or n <= 0:
        return ""
    if ev.get("not_shown_basis") == "server total":
        return f"; the server counts {n} more deadlock(s) not shown here: {SEE_ALL}"
    return f"; {n} deadlock(s) not shown since the count started: {SEE_ALL}"


def _unseen(ctx: CheckContext, since: int, counter: int | None, scope: str | None) -> Finding:
    where = (
        f" (a server-wide counter: they may be in any schema, not only {scope})" if scope else ""
    )
    return ctx.finding(
        severity=ctx.rule.severity,
        subject="deadlocks not shown",
        summary=f"{plural(since, 'deadlock')} since the last probe (Innodb_deadlocks {counter}){where}, "
        f"none of them shown: the status text's latest deadlock is older; {SEE_ALL}",
        fix="SET GLOBAL innodb_print_all_deadlocks = ON (and in my.cnf); then set log_file "
        "for this target so the daemon reads every deadlock with its diagnosis.",
        evidence={
            "deadlocks_since_last_probe": since,
            **not_shown_evidence(ctx.state, ctx.snapshot.target, counter, since, 0),
            "deadlocks_total": counter,
        },
        identity=f"unseen:{counter}",
    )


def _oldest(ctx: CheckContext) -> MyThread | None:
    trx = ctx.snapshot.get(MY_TRX) or ()
    return max(trx, key=lambda t: float(t.trx_seconds or 0), default=None)


def _history_inputs(snap: Snapshot) -> tuple[object, ...]:
    """MY201: the counters, the transactions, and the status it falls back on."""
    get = snap.sections.get
    return (get("my.innodb_counters"), get("my.trx"), get("my.innodb_status"))


@pure(_history_inputs)
@check("history_list", mysql=["my.innodb_counters", "my.trx"])
def history_list(ctx: CheckContext) -> Iterator[Finding]:
    counters = ctx.snapshot.get(MY_INNODB_COUNTERS) or InnodbCounters()
    hll = counters.history_list_length
    if hll is None:
        status = ctx.snapshot.get(MY_INNODB_STATUS)
        hll = status.history_list_length if status is not None else None
    sev = ctx.grade(hll)
    if not sev:
        return
    oldest = _oldest(ctx)
    if oldest:
        who = (
            f"the oldest open transaction is thread {oldest.thread_id} "
            f"({oldest.user}@{oldest.host}, {oldest.command}) open for "
            f"{format_duration(oldest.trx_seconds)}: it holds back purge"
        )
        fix = (
            f"End it: commit/rollback in the application, or KILL {oldest.thread_id}; "
            "then purge catches up (watch the history list length fall)."
        )
    else:
        who = "no open transaction now: purge is behind on its own (write load, purge threads)"
        fix = "Raise innodb_purge_threads / innodb_purge_batch_size; check for I/O saturation."
    yield ctx.finding(
        severity=sev,
        subject="history list length",
        summary=ctx.summary(history_list_length=f"{hll:,}") + f"; {who}",
        fix=fix,
        evidence={"history_list_length": hll, "oldest": oldest.to_json() if oldest else None},
        identity="history_list_length",
    )
