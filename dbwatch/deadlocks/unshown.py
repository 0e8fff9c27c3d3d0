"""Nothing unsaid: the deadlocks a server counted that dbwatch did not show. The daemon keeps a
running total per target (the counter's delta minus the deadlocks it recorded, each cycle); a
one-shot audit says the server's total minus what it shows. Pure arithmetic plus the series keys."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeGuard, runtime_checkable

from ..frozen import frozen
from ..snapshot import Snapshot

COUNTER_KEY = "deadlocks:server"  # the counter this accounting compares (the target's scope)
NOT_SHOWN_KEY = "deadlocks:not_shown"  # the running total of deadlocks counted and not shown
WINDOW = 30 * 86400.0  # how far back the last point is looked for


@runtime_checkable
class _History(Protocol):
    def history(self, target: str, key: str, since_seconds: float) -> list[tuple[float, float]]: ...


@runtime_checkable
class _Points(Protocol):
    """The daemon's state: one series point by the (target, key, ts) index, not the window's
    thousands (a 30-day window grows by a point per cycle)."""

    def last_point(
        self, target: str, key: str, since_seconds: float
    ) -> list[tuple[float, float]]: ...

    def first_point(
        self, target: str, key: str, since_seconds: float
    ) -> list[tuple[float, float]]: ...


_CLASS_HAS: dict[tuple[type, type], bool] = {}


def class_has(cls: type, proto: type) -> bool:
    """issubclass for a protocol of methods, per class once (isinstance: ~8 µs a time)."""
    got = _CLASS_HAS.get((cls, proto))
    if got is None:
        got = _CLASS_HAS[(cls, proto)] = issubclass(cls, proto)
    return got


def _points(state: object) -> TypeGuard[_Points]:
    return class_has(type(state), _Points) or isinstance(state, _Points)


def _history(state: object) -> TypeGuard[_History]:
    return class_has(type(state), _History) or isinstance(state, _History)


def server_counter(snap: Snapshot) -> int | None:
    """Innodb_deadlocks / lock_deadlocks (server-wide), or pg_stat_database.deadlocks of the
    target's database (all databases for an unscoped target)."""
    if snap.has("my.innodb_counters"):  # each engine's rows imported for its snapshot only
        deadlocks = _my_counter(snap)
        if deadlocks is not None:
            return deadlocks
    if not snap.has("pg.deadlocks"):
        return None
    return _pg_counter(snap)


# each engine's reading of its counter, its rows imported on its first snapshot (not by an
# import statement per cycle)
_MY: list[Callable[[Snapshot], int | None]] = []
_PG: list[Callable[[Snapshot], int | None]] = []


def _my_counter(snap: Snapshot) -> int | None:
    if not _MY:
        from ..snapshot.my import MY_INNODB_COUNTERS

        def counter(s: Snapshot) -> int | None:
            counters = s.get(MY_INNODB_COUNTERS)
            if counters is not None and counters.deadlocks is not None:
                return int(counters.deadlocks)
            return None

        _MY.append(counter)
    return _MY[0](snap)


def _pg_counter(snap: Snapshot) -> int | None:
    if not _PG:
        from ..snapshot.pg_mvcc import PG_DEADLOCKS, deadlocks_in_scope  # PostgreSQL's rows

        def counter(s: Snapshot) -> int | None:
            rows = s.get(PG_DEADLOCKS)
            if rows is None:
                return None
            # the target's database's row by the shared read's index, not a walk of every
            # database's
            return sum(int(d.deadlocks or 0) for d in deadlocks_in_scope(rows, s.scope))

        _PG.append(counter)
    return _PG[0](snap)


@frozen
class Unshown:
    counter: int | None
    delta: int | None  # counted since the previous cycle; None on the first look
    recorded: int  # deadlocks the daemon recorded this cycle
    not_shown: int  # this cycle's
    total: int  # the running total


def last(state: object, target: str, key: str) -> tuple[float, float] | None:
    """The newest point of one of the daemon's series, or None (one-shot audit, no state)."""
    if _points(state):
        points = state.last_point(target, key, WINDOW)
    elif _history(state):
        points = state.history(target, key, WINDOW)
    else:
        return None
    return points[-1] if points else None


def first_ts(state: object, target: str) -> float | None:
    if _points(state):
        points = state.first_point(target, NOT_SHOWN_KEY, WINDOW)
    elif _history(state):
        points = state.history(target, NOT_SHOWN_KEY, WINDOW)
    else:
        return None
    return points[0][0] if points else None


def account(state: object, target: str, counter: int | None, recorded: int) -> Unshown:
    """One cycle's accounting; the caller records COUNTER_KEY = counter, NOT_SHOWN_KEY = total."""
    if counter is None:  # nothing to account (no counter read): nothing is recorded either
        return Unshown(None, None, recorded, 0, 0)
    prev = last(state, target, COUNTER_KEY)
    prev_total = last(state, target, NOT_SHOWN_KEY)
    total = int(prev_total[1]) if prev_total else 0
    if prev is None:  # first look: the baseline
        return Unshown(counter, None, recorded, 0, total)
    before = int(prev[1])
    delta = counter - before if counter >= before else counter  # a reset restarts the count
    cycle = max(delta - recorded, 0)
    return Unshown(counter, delta, recorded, cycle, total + cycle)


def running_total(state: object, target: str) -> int | None:
    """The running total before this cycle, or None outside the daemon."""
    if not _history(state):
        return None
    point = last(state, target, NOT_SHOWN_KEY)
    return int(point[1]) if point else 0


def one_shot(counter: int | None, shown: int) -> int | None:
    """A one-shot audit: the server's total minus what it shows (None: no counter read)."""
    return None if counter is None else max(counter - shown, 0)


def evidence(
    state: object, target: str, counter: int | None, since: int | None, shown: int
) -> dict[str, object]:
    """MY102/PG102's `not_shown`: in the daemon the running total including this cycle's
    (counted since the last probe minus what this finding shows); in a one-shot audit the
    server's total minus what it shows."""
    total = running_total(state, target)
    if total is None:
        return {"not_shown": one_shot(counter, shown), "not_shown_basis": "server total"}
    cycle = max((since or 0) - shown, 0)
    return {
        "not_shown": total + cycle,
        "not_shown_since_last_probe": cycle,
        "not_shown_basis": "running total",
        "not_shown_counting_since": first_ts(state, target),
    }
