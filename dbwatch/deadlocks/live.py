"""The daemon's hook for `log_file`: tail the log, record each deadlock once, and turn the new
ones into MY102/PG102 findings with their details (a burst becomes one finding with counts)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable
from operator import attrgetter
from pathlib import Path
from typing import Protocol

from ..findings import Finding
from ..parsers.deadlock_model import Deadlock
from ..parsers.innodb_storm import Later, LazyDerive
from ..records import in_scope
from .record import DeadlockRecord, deadlock_record
from .stored import full_text, stored_text
from .tailer import StateDb, load_position, poll, save_position
from .text import deadlock_fields, victim_text

log = logging.getLogger(__name__)

MAX_SEPARATE = 5  # more new deadlocks than this in one look: one summary finding


class DeadlockJournal(StateDb, Protocol):
    """The daemon's state as the tail uses it: its transaction, the log position and the
    deadlock journal (daemon.state.State)."""

    def record_deadlocks(
        self, target: str, rows: Iterable[tuple[str, object, object]]
    ) -> list[bool]: ...


def _finding(rule: str, target: str, rec: DeadlockRecord, severity: str) -> Finding:
    return Finding(
        rule=rule,
        severity=severity,
        target=target,
        **deadlock_fields(rec, "from the server log", "log_file"),
    )


def _burst(rule: str, target: str, recs: list[Later[DeadlockRecord]], severity: str) -> Finding:
    """One finding for many: the latest record built, the others' key, time and pattern
    only (Later.values, by _ATTRS)."""
    patterns = Counter(str(r.values[_PATTERN]) for r in recs)
    latest = recs[-1].get()
    top = ", ".join(f"{p} ×{n}" for p, n in patterns.most_common(5))
    return Finding(
        rule=rule,
        severity=severity,
        target=target,
        subject=f"deadlocks {recs[0].values[_AT]} … {latest.at}",
        summary=f"{len(recs)} deadlocks in the server log since the last look ({top}); "
        f"latest: {victim_text(latest)}",
        fix=latest.diagnosis.fix,
        evidence={
            "count": len(recs),
            "by_pattern": dict(patterns),
            "latest": latest.to_json(),
            "source": "log_file",
            "see_all": f"dbwatch deadlocks --history {target} / --log <file> --summary",
        },
        identity=f"burst:{recs[0].values[_KEY]}",
    )


def _logged(dl: Deadlock) -> tuple[DeadlockRecord, str]:
    """A deadlock read from the log: its record and the JSON the journal stores of it (the
    compact form where it reads back the same: deadlocks.stored). A storm's reports of one
    shape get both from templates (parsers.innodb_storm.Derive), exactly."""
    rec = deadlock_record(dl).tagged(source="log_file")
    return rec, stored_text(rec)


def _logged_once(dl: Deadlock) -> tuple[DeadlockRecord, str]:
    """_logged of a deadlock built the full way (a one-off report, the first of a shape): the
    full row, as before. The compact row's check (its diagnosis derived again, ~130 µs) costs
    more than its smaller page saves (~7 µs) when paid for one row; a storm pays it once per
    shape, at the learning points, and its rows come from the compact text's template."""
    rec = deadlock_record(dl).tagged(source="log_file")
    return rec, full_text(rec)


def _databases(rec: DeadlockRecord) -> tuple[str, ...]:
    return tuple(sorted(rec.databases()))


# what the tail reads of every record (Later.values); the rest of a record is built only for
# the findings it makes: all of them up to MAX_SEPARATE, else the latest
_ATTRS: tuple[Callable[[DeadlockRecord], object], ...] = (
    attrgetter("key"),
    attrgetter("at"),
    _databases,
    attrgetter("diagnosis.pattern"),
)
_KEY, _AT, _DATABASES, _PATTERN = range(4)


def _in_scope(rec: Later[DeadlockRecord], scope: str) -> bool:
    dbs = rec.values[_DATABASES]
    assert isinstance(dbs, tuple)
    return in_scope(dbs, scope)


def tail_findings(
    state: DeadlockJournal,
    target: str,
    engine: str,
    log_file: str,
    severity: str = "warning",
    warned: set[str] | None = None,
    scope: str | None = None,
) -> list[Finding]:
    """Read what is new in the target's log; record and return findings for new deadlocks.
    `warned`: the caller's set of logs already reported unreadable (said once, not per cycle).
    `scope`: the schema a MySQL target is scoped to; a deadlock touching none of its tables is
    skipped (not recorded, logged or reported), as `dbwatch deadlocks URL` and MY102 do.
    PostgreSQL log entries name schemas, not databases: they are not filtered here."""
    pos = load_position(state, target)
    derived = LazyDerive(_logged, _ATTRS, once=_logged_once)
    new_pos = poll(Path(log_file), engine, pos, warned, derived)[1]  # records in derived.out
    kept = derived.out
    if engine == "mysql" and scope is not None:
        kept = [(rec, stored) for rec, stored in kept if _in_scope(rec, scope)]
    with state.transaction() as db:
        new = state.record_deadlocks(
            target, [(str(r.values[_KEY]), r.values[_AT], stored) for r, stored in kept]
        )
        if new_pos is not None:
            save_position(db, target, new_pos)
    fresh = [rec for (rec, _), is_new in zip(kept, new, strict=True) if is_new]
    if fresh:
        log.info("%d new deadlocks in %s (%s)", len(fresh), log_file, target)
    rule = "PG102" if engine == "postgresql" else "MY102"
    if len(fresh) > MAX_SEPARATE:
        return [_burst(rule, target, fresh, severity)]
    return [_finding(rule, target, r.get(), severity) for r in fresh]
