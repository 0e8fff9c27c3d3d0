"""Keeps the daemon's resident memory flat on glibc: fewer malloc arenas, periodic trim.

Measured (contrib/bench/bench_soak.py, 200 targets): with a thread per running cycle and
glibc's default of 8 arenas per core, freed memory stays scattered over many arenas and RSS
creeps up; two arenas and a malloc_trim(0) every minute return it to the system. A no-op
where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading

log = logging.getLogger(__name__)
M_ARENA_MAX = -8  # mallopt(3)
ARENAS = 2
TRIM_EVERY = 60.0


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim  # noqa: B018 -- glibc only
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


class MemoryKeeper:
    """start(): limit arenas (before the worker threads exist) and trim every minute."""

    def __init__(self, every: float = TRIM_EVERY) -> None:
        self.every = every
        self.trims = 0
        self._libc = _libc()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._libc is None:
            return
        try:
            self._libc.mallopt(M_ARENA_MAX, ARENAS)
        except OSError:
            log.debug("mallopt failed", exc_info=True)
        self._thread = threading.Thread(target=self._loop, name="dbwatch-memory", daemon=True)
        self._thread.start()

    def trim(self) -> None:
        if self._libc is not None:
            self._libc.malloc_trim(0)
            self.trims += 1

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.trim()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
