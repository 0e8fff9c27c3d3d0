"""Keeps the daemon's resident memory flat on glibc: fewer malloc arenas, periodic trim; and
keeps the garbage collector off what lives as long as the daemon.

Measured (contrib/bench/bench_soak.py, 200 targets): with a thread per running cycle and
glibc's default of 8 arenas per core, freed memory stays scattered over many arenas and RSS
creeps up; two arenas and a malloc_trim(0) every minute return it to the system. A no-op
where the C library is not glibc.

The heap settled (`settle()`): once the start-up's first looks are done (and after a reload)
what is alive — the targets' sessions, caches, rules, the catalog — stays alive, yet every
full collection of the cyclic garbage collector walked all of it again: at 1,000 targets a
full collection every minute or so, ~0.1 ms per cycle of GC in all (issue 28). settle()
collects everything once and then freezes what is left (`gc.freeze()`: out of the collector's
generations); the collector then walks only what was made since. Objects in the frozen part
are still freed by their reference counts; only a reference cycle among them would wait: so
the keeper re-settles every REFREEZE_EVERY (unfreeze, one full collection, freeze), and a
reload re-settles at once. Cyclic garbage is therefore collected within REFREEZE_EVERY, where
before it waited for the collector's own full collection. Settled, the young generation is
collected every YOUNG allocations instead of 700: a cycle's objects mostly die by their
reference counts within it, and each young collection promoted those still in flight (the
cycles running at that instant) into the older generations, which then walked them again.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import threading
import time

log = logging.getLogger(__name__)
M_ARENA_MAX = -8  # mallopt(3)
ARENAS = 2
TRIM_EVERY = 60.0
# the frozen part of the heap is collected (unfrozen, collected, frozen again) this often
REFREEZE_EVERY = 600.0


# the young generation's threshold once settled (CPython's default: 700 allocations)
YOUNG = 10_000


def settle() -> None:
    """One full collection, then what is left is frozen, and the young generation widened
    (see the module's doc)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    young, middle, oldest = gc.get_threshold()
    gc.set_threshold(max(YOUNG, young), middle, oldest)


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim  # noqa: B018 -- glibc only
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


class MemoryKeeper:
    """start(): limit arenas (before the worker threads exist) and trim every minute;
    settle_soon(): settle the heap (in this keeper's thread), then again every
    REFREEZE_EVERY."""

    def __init__(self, every: float = TRIM_EVERY, refreeze: float = REFREEZE_EVERY) -> None:
        self.every = every
        self.refreeze = refreeze
        self.trims = 0
        self.settles = 0
        self._libc = _libc()
        self._stop = threading.Event()
        self._cv = threading.Condition()
        self._settle_asked = False
        self._settled_at: float | None = None  # None: never settled (nothing frozen)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._libc is not None:
            try:
                self._libc.mallopt(M_ARENA_MAX, ARENAS)
            except OSError:
                log.debug("mallopt failed", exc_info=True)
        self._thread = threading.Thread(target=self._loop, name="dbwatch-memory", daemon=True)
        self._thread.start()

    def settle_soon(self) -> None:
        """The start-up's first looks are done, or a reload happened: settle the heap."""
        with self._cv:
            self._settle_asked = True
            self._cv.notify_all()

    def settle(self) -> None:
        settle()
        self.settles += 1
        self._settled_at = time.monotonic()

    def trim(self) -> None:
        if self._libc is not None:
            self._libc.malloc_trim(0)
            self.trims += 1

    def _loop(self) -> None:
        trim_at = time.monotonic() + self.every
        while True:
            with self._cv:
                now = time.monotonic()
                until = trim_at
                if self._settled_at is not None:
                    until = min(until, self._settled_at + self.refreeze)
                if not self._settle_asked and not self._stop.is_set():
                    self._cv.wait(max(0.0, until - now))
                if self._stop.is_set():
                    return
                now = time.monotonic()
                asked, self._settle_asked = self._settle_asked, False
            if asked or (self._settled_at is not None and now >= self._settled_at + self.refreeze):
                self.settle()
            if now >= trim_at:
                self.trim()
                trim_at = now + self.every

    def stop(self) -> None:
        with self._cv:
            self._stop.set()
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join(1.0)
