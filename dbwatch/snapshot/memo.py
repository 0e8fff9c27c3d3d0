"""What is derived from one read, kept with that read: the daemon shares a server-wide read
(pg.sessions, pg.deadlocks, the InnoDB status) between that server's targets, so what every
target derives from it the same way (sessions by database, the lock graph, the horizon's
backends and holders, the diagnosed latest deadlock) is computed once per read, not once per
target-cycle. A target then pays its own filter only.

Kept by the read's identity (the object itself is held, so its id stays its own), for the
newest KEPT_READS reads: a read no longer shared (the next interval's replaced it) drops out
with its derivations. The derivations must be functions of the read (and of `also`, the other
objects they read, whose identity is part of the key), never of the target: a target-specific
result is never cached here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import TypeVar, cast

T = TypeVar("T")

# reads kept with their derivations: a few per server (sessions, deadlock counters, InnoDB
# status); more servers than this recompute (correct, slower), never mix
KEPT_READS = 64

_READS: dict[int, tuple[object, dict[Hashable, tuple[tuple[object, ...], object]]]] = {}
_LOCK = threading.Lock()


def per_read(
    read: object, what: Hashable, make: Callable[[], T], also: tuple[object, ...] = ()
) -> T:
    """`make()`, computed once per `read` object (and the objects `also`, by identity) and
    the same object for every later caller (who must not change it). Two threads asking at
    once may both make it; the first stored wins."""
    hit = _READS.get(id(read))
    if hit is not None and hit[0] is read:
        memo = hit[1]
        got = memo.get(what)
        if got is not None and _same(got[0], also):
            return cast(T, got[1])
    else:
        memo = {}
    out = make()
    with _LOCK:  # the daemon's threads: eviction iterates the dict
        hit = _READS.get(id(read))
        if hit is None or hit[0] is not read:
            hit = _READS[id(read)] = (read, memo)
            while len(_READS) > KEPT_READS:  # the oldest reads go
                _READS.pop(next(iter(_READS)), None)
        got = hit[1].get(what)
        if got is not None and _same(got[0], also):
            return cast(T, got[1])
        hit[1][what] = (also, out)
    return out


def _same(kept: tuple[object, ...], also: tuple[object, ...]) -> bool:
    if kept is also:  # () is one object: most derivations read nothing else
        return True
    if len(kept) != len(also):
        return False
    for a, b in zip(kept, also, strict=True):
        if a is not b:
            return False
    return True


def forget() -> None:
    """Every kept derivation (tests)."""
    with _LOCK:
        _READS.clear()
