"""Runs target cycles: one slot per target, a shared pool for answering targets, deadlines.

A target's cycle runs in its own thread (its slot): a second cycle never starts while one is
running, so a hanging target never piles connections onto its server. Targets that answered
their last cycle share `pool` permits (bounding concurrent work on busy servers); a target
that did not answer (timeout, deadline, never probed yet) runs outside the pool, so the hung
ones cannot take the healthy ones' permits. A cycle past its deadline is abandoned: its
permit is given back, its connection is shut down under it, and the target is reported.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..targets import Connection
from ..targets.abort import abort

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Slot:
    """One running cycle of one target."""

    name: str
    scheduled: float
    deadline: float = 0.0
    started: float = 0.0
    pooled: bool = False
    held: bool = False  # holds a pool permit
    abandoned: bool = False
    reported: bool = False  # the abandonment was reported (missed)
    conns: list[Connection] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def opened(self, conn: Connection) -> None:
        """The cycle's connection, so a deadline can shut it down; too late: at once."""
        with self.lock:
            self.conns.append(conn)
            late = self.abandoned
        if late:
            abort(conn)

    def _abandon(self) -> list[Connection]:
        with self.lock:
            self.abandoned = True
            return list(self.conns)


Job = Callable[[Slot], object]
Missed = Callable[[str, str], None]  # (target, why): a scheduled cycle that got no answer


class Runner:
    """submit(name, scheduled) from the scheduler; the job gets its Slot."""

    def __init__(self, job: Job, pool: int, timeout: float, missed: Missed) -> None:
        self.job = job
        self.timeout = timeout
        self.missed = missed
        self.pool = pool
        self._lock = threading.Condition()
        self._free = pool  # pool permits not held (negative for a while after a shrink)
        self._running: dict[str, Slot] = {}
        self._answering: set[str] = set()
        self._deadlines: list[tuple[float, int, Slot]] = []
        self._seq = 0
        self._stopping = False
        self._watch = threading.Thread(target=self._watchdog, name="dbwatch-deadlines", daemon=True)
        self._watch.start()

    # -- submitting ------------------------------------------------------------------------

    def submit(self, name: str, scheduled: float) -> bool:
        """Start a cycle of `name` unless one is still running (then it is a missed cycle)."""
        with self._lock:
            if self._stopping:
                return False
            busy = self._running.get(name)
            if busy is None:
                slot = Slot(name, scheduled, pooled=name in self._answering)
                self._running[name] = slot
        if busy is not None:
            why = "still waiting for the previous cycle"
            if busy.abandoned:
                why = "the previous cycle hangs past its deadline"
            self.missed(name, why)
            return False
        t = threading.Thread(target=self._run, args=(slot,), name=f"dbwatch-{name}", daemon=True)
        t.start()
        return True

    def answered(self, name: str, ok: bool) -> None:
        """The cycle's verdict: answering targets share the pool, the others run beside it."""
        with self._lock:
            if ok:
                self._answering.add(name)
            else:
                self._answering.discard(name)

    def forget(self, keep: set[str]) -> None:
        with self._lock:
            self._answering &= keep

    def resize(self, pool: int, timeout: float) -> None:
        with self._lock:
            self._free += pool - self.pool
            self.pool, self.timeout = pool, timeout
            self._lock.notify_all()

    def _run(self, slot: Slot) -> None:
        try:
            with self._lock:
                if slot.pooled:
                    self._lock.wait_for(lambda: self._free > 0 or self._stopping)
                    if self._stopping:
                        return
                    self._free -= 1
                    slot.held = True
                slot.started = time.time()
                slot.deadline = slot.started + self.timeout
                self._seq += 1
                heapq.heappush(self._deadlines, (slot.deadline, self._seq, slot))
                self._lock.notify_all()
            self.job(slot)
        finally:
            with self._lock:
                if slot.held:
                    slot.held = False
                    self._free += 1
                if self._running.get(slot.name) is slot:
                    del self._running[slot.name]
                self._lock.notify_all()

    # -- deadlines ---------------------------------------------------------------------------

    def _watchdog(self) -> None:
        while True:
            with self._lock:
                while True:
                    if self._stopping and not self._running:
                        return
                    now = time.time()
                    while self._deadlines and (
                        self._deadlines[0][2].name not in self._running
                        or self._running[self._deadlines[0][2].name] is not self._deadlines[0][2]
                    ):
                        heapq.heappop(self._deadlines)  # finished in time
                    if self._deadlines and self._deadlines[0][0] <= now:
                        slot = heapq.heappop(self._deadlines)[2]
                        break
                    wait = self._deadlines[0][0] - now if self._deadlines else None
                    self._lock.wait(wait)
                conns = slot._abandon()
                if slot.held:
                    slot.held = False
                    self._free += 1  # the hung cycle keeps its slot, not a permit
                self._answering.discard(slot.name)
                self._lock.notify_all()
            log.warning(
                "target %s did not answer within %.0fs: cycle abandoned, connection shut down",
                slot.name,
                self.timeout,
            )
            for conn in conns:
                abort(conn)
            try:
                self.missed(slot.name, f"no answer within {self.timeout:.0f}s")
            finally:
                with self._lock:
                    slot.reported = True
                    self._lock.notify_all()

    # -- stopping ----------------------------------------------------------------------------

    def running(self) -> list[str]:
        with self._lock:
            return sorted(self._running)

    def wait_settled(self, timeout: float | None = None) -> bool:
        """Until every cycle has finished or been abandoned (--once)."""
        with self._lock:
            return self._lock.wait_for(
                lambda: all(s.reported for s in self._running.values()), timeout
            )

    def stop(self, timeout: float) -> list[str]:
        """No new cycles; wait up to `timeout` for running ones, then shut their connections
        and return the names still running (their threads are daemon threads)."""
        end = time.time() + timeout
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
            while self._running and time.time() < end:
                self._lock.wait(max(0.0, end - time.time()))
            left = list(self._running.values())
        for slot in left:
            for conn in slot._abandon():
                abort(conn)
        with self._lock:
            self._lock.notify_all()
        return sorted(s.name for s in left)
