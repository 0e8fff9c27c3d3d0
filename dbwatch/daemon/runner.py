"""Runs target cycles: one slot per target, a shared pool for answering targets, deadlines.

Each target has one slot: a second cycle never starts while one is running, so a hanging
target never piles connections onto its server. Targets that answered their last cycle are
run by `pool` worker threads (bounding concurrent work, and threads: each costs ~0.3 MiB); a
target that has not answered yet or whose last cycle got no answer (connect timeout,
deadline) runs on an own-lane thread beside the pool until it answers, so hung targets cannot
take the healthy ones' turns. Own-lane threads are reused and exit after OWN_IDLE idle. A cycle past its
deadline is abandoned: its connections are shut down under it, a pool worker stuck in it is
replaced, and the target is reported. Cycle threads are SCHED_BATCH where the OS has it
(batch.py: a woken worker does not preempt the thread that woke it).
"""

from __future__ import annotations

import heapq
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ..targets import Connection
from ..targets.abort import abort
from .batch import batch_thread

log = logging.getLogger(__name__)
# An own-lane thread idle this long exits: long enough to be reused by the next cycle of a
# hung target (intervals are 15-60 s), short enough not to keep the first cycles' threads.
OWN_IDLE = 90.0
# A slot of the grid wakes only the pool workers that, taking its cycles one after another, end
# them within SPREAD s at the pool's recent cycle length. Slow cycles get help: a worker that
# takes a cycle due more than SPREAD s ago while more wait wakes one more, and SPREAD s after
# the slot's time the deadlines thread wakes a worker for every cycle still queued (the woken
# ones may all be held by slow targets). Waking one worker per cycle cost a thread hand-off per
# cycle and ran each on a cold thread (issue 28; docs/cycle-cost.md "A one-second grid").
SPREAD = 0.05


@dataclass(eq=False)
class Slot:
    """One running cycle of one target."""

    name: str
    scheduled: float
    deadline: float = 0.0
    started: float = 0.0
    probing: float = 0.0  # when the probe began (a fleet's: after the lease check), else 0
    pooled: bool = False
    abandoned: bool = False
    reported: bool = False  # the abandonment was reported (missed)
    seq: int = 0  # its entry in the runner's deadlines
    connected: bool = False  # the target answered a connection (or a kept one was reused)
    conns: list[Connection] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def connecting_for(self, now: float) -> float:
        """Seconds this cycle has been running without a connection (0 once it has one)."""
        with self.lock:
            if not self.started or self.connected:
                return 0.0
        return now - self.started

    def opened(self, conn: Connection) -> None:
        """The cycle's connection, so a deadline can shut it down; too late: at once."""
        with self.lock:
            self.conns.append(conn)
            self.connected = True
            late = self.abandoned
        if late:
            abort(conn)

    def release(self) -> None:
        """The cycle gave its sessions back (kept sessions go to the pool): not to be shut."""
        with self.lock:
            self.conns.clear()

    def _abandon(self) -> list[Connection]:
        with self.lock:
            self.abandoned = True
            return list(self.conns)


Job = Callable[[Slot], object]
Missed = Callable[[str, str], None]  # (target, why): a scheduled cycle that got no answer


class Runner:
    """submit(name, scheduled) from the scheduler; the job gets its Slot."""

    def __init__(
        self, job: Job, pool: int, timeout: float, missed: Missed, connect_grace: float = 4.0
    ) -> None:
        self.job = job
        # a tick while the previous cycle has been connecting this long is a missed cycle; a
        # cycle that got its connection is answering (slow probes are the deadline's business)
        self.connect_grace = connect_grace
        self.timeout = timeout
        self.missed = missed
        self.pool = pool
        self.skipped = 0  # ticks dropped because the target's previous cycle was not done
        self._skipped_names: set[str] = set()
        self._said = 0.0
        mutex = threading.Lock()
        self._lock = threading.Condition(mutex)  # deadlines, reports, finished cycles
        self._work = threading.Condition(mutex)  # pool workers: a cycle was queued
        self._own_work = threading.Condition(mutex)  # own-lane threads: a cycle was queued
        self._queue: deque[Slot] = deque()  # pooled cycles waiting for a worker
        self._own_queue: deque[Slot] = deque()  # cycles of targets outside the pool
        self._own_idle = 0  # own-lane threads waiting for work
        self._workers = 0  # pool workers alive and not stuck in an abandoned cycle
        self._cycle_wall = 0.01  # a pooled cycle's recent length (s, moving average)
        self._rescue_at = 0.0  # when the deadlines thread wakes workers for what is queued
        self._running: dict[str, Slot] = {}
        self._answering: set[str] = set()  # targets whose last cycle got an answer
        # (deadline, seq, name): no Slot in it, so a finished cycle's slot is freed at once
        # (not kept by a stale entry for `timeout` s, through the garbage collector's ages)
        self._deadlines: list[tuple[float, int, str]] = []
        self._seq = 0
        self._stopping = False
        self._settling = 0  # threads in wait_settled()
        # missed cycles are reported (state DB writes, alerts) off the scheduler's thread
        self._reports: deque[tuple[str, str, Slot | None]] = deque()
        self._watch = threading.Thread(target=self._watchdog, name="dbwatch-deadlines", daemon=True)
        self._watch.start()
        self._reporter = threading.Thread(target=self._report, name="dbwatch-missed", daemon=True)
        self._reporter.start()
        with self._lock:
            self._spawn_workers()

    # -- submitting ------------------------------------------------------------------------

    def submit(self, name: str, scheduled: float) -> bool:
        """Start a cycle of `name` unless one is still running (then the tick is dropped; it
        is a missed cycle if that one hangs on the target)."""
        return self.submit_all([name], scheduled) == 1

    def submit_all(self, names: list[str], scheduled: float) -> int:
        """submit() for every target of a slot of the grid, under one hold of the lock and
        with one notify for the pool's share (the scheduler's thread and the woken workers
        no longer take turns at the lock per target); how many started."""
        busy: list[tuple[str, Slot]] = []
        own: list[Slot] = []
        with self._lock:
            if self._stopping:
                return 0
            pooled = 0
            for name in names:
                running = self._running.get(name)
                if running is not None:
                    self.skipped += 1
                    self._skipped_names.add(name)
                    busy.append((name, running))
                    continue
                slot = Slot(name, scheduled, pooled=name in self._answering)
                self._running[name] = slot
                if slot.pooled:
                    self._queue.append(slot)
                    pooled += 1
                else:
                    own.append(slot)
            if pooled:
                # (cycles queued before this slot waited a grid step: each gets a worker)
                want = math.ceil(pooled * self._cycle_wall / SPREAD) + len(self._queue) - pooled
                self._work.notify(max(1, min(want, len(self._queue))))
                if want < len(self._queue) and not self._rescue_at:
                    self._rescue_at = scheduled + SPREAD
                    self._lock.notify_all()  # the deadlines thread: one more instant to keep
            for slot in own:
                self._own_queue.append(slot)
                if len(self._own_queue) > self._own_idle:  # nobody free: one more thread
                    self._seq += 1
                    threading.Thread(
                        target=self._own_worker, name=f"dbwatch-own-{self._seq}", daemon=True
                    ).start()
                    self._own_idle += 1  # counted at once, so a burst spawns one per slot
                self._own_work.notify()
        if busy:
            self._say_skipped()
            now = time.time()
            for name, running in busy:
                if running.abandoned:
                    self._miss(name, "the previous cycle still hangs past its deadline")
                elif running.connecting_for(now) >= self.connect_grace:
                    self._miss(name, "the previous cycle is still waiting for the server to answer")
        return len(names) - len(busy)

    def _say_skipped(self) -> None:
        """Skipped ticks, said at most once a minute for all targets together."""
        with self._lock:
            now = time.time()
            if now - self._said < 60:
                return
            names, self._skipped_names, self._said = sorted(self._skipped_names), set(), now
        log.warning(
            "%d targets skipped a cycle in the last minute because the previous one was still "
            "running or waiting (%s%s): slow or dead targets, or too many targets for %d workers",
            len(names),
            ", ".join(names[:5]),
            ", …" if len(names) > 5 else "",
            self.pool,
        )

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
            self.pool, self.timeout = pool, timeout
            self._spawn_workers()
            self._work.notify_all()  # surplus workers retire

    # -- running -----------------------------------------------------------------------------

    def _spawn_workers(self) -> None:
        """Called with the lock held: top the pool up to `pool` workers."""
        while self._workers < self.pool and not self._stopping:
            self._workers += 1
            self._seq += 1
            threading.Thread(
                target=self._worker, name=f"dbwatch-pool-{self._seq}", daemon=True
            ).start()

    def _worker(self) -> None:
        batch_thread()  # woken by a hand-over, it waits for the waker to block (batch.py)
        while True:
            with self._lock:
                self._work.wait_for(
                    lambda: self._queue or self._stopping or self._workers > self.pool
                )
                if self._stopping or self._workers > self.pool:
                    self._workers -= 1
                    return
                slot = self._queue.popleft()
                if self._queue and time.time() - self._queue[0].scheduled > SPREAD:
                    self._work.notify()  # the slot's cycles fall behind: one more worker
            self._execute(slot)
            with self._lock:
                if slot.abandoned:  # replaced by the watchdog meanwhile: this thread retires
                    return
                wall = time.time() - slot.started
                self._cycle_wall += (min(wall, 1.0) - self._cycle_wall) / 16
            del slot  # an idle worker keeps no finished cycle (nor its result's objects)

    def _own_worker(self) -> None:
        """Runs cycles of targets outside the pool, one at a time; idles for the next one
        instead of exiting, so threads (and their stacks) are reused, not churned."""
        batch_thread()
        while True:
            with self._lock:
                ok = self._own_work.wait_for(
                    lambda: self._own_queue or self._stopping, timeout=OWN_IDLE
                )
                self._own_idle -= 1
                if self._stopping or not ok:
                    return
                slot = self._own_queue.popleft()
            self._execute(slot)
            with self._lock:
                if slot.abandoned:  # stuck threads do not come back
                    return
                self._own_idle += 1
            del slot

    def _execute(self, slot: Slot) -> None:
        with self._lock:
            slot.started = time.time()
            slot.deadline = slot.started + self.timeout
            self._seq += 1
            slot.seq = self._seq
            heapq.heappush(self._deadlines, (slot.deadline, self._seq, slot.name))
            # the watchdog sleeps until the earliest deadline: woken only if this one is
            # earlier (the deadlines and reporter threads woke twice a cycle for nothing)
            if self._deadlines[0][1] == slot.seq:
                self._lock.notify_all()
        try:
            self.job(slot)
        except Exception:  # the job logs its own failures; this keeps the worker alive
            log.exception("cycle of %s raised", slot.name)
        finally:
            with self._lock:
                if self._running.get(slot.name) is slot:
                    del self._running[slot.name]
                if self._stopping or self._settling:  # stop() / wait_settled() wait for it
                    self._lock.notify_all()

    # -- deadlines ---------------------------------------------------------------------------

    def _watchdog(self) -> None:
        while True:
            with self._lock:
                while True:
                    if self._stopping and not self._running:
                        return
                    now = time.time()
                    while self._deadlines and not self._live(self._deadlines[0]):
                        heapq.heappop(self._deadlines)  # finished in time
                    if self._rescue_at and self._rescue_at <= now:
                        self._rescue_at = 0.0
                        if self._queue:  # the slot's woken workers did not get through it
                            self._work.notify(len(self._queue))
                    if self._deadlines and self._deadlines[0][0] <= now:
                        slot = self._running[heapq.heappop(self._deadlines)[2]]
                        break
                    wait = self._deadlines[0][0] - now if self._deadlines else None
                    if self._rescue_at:
                        rescue = self._rescue_at - now
                        wait = rescue if wait is None else min(wait, rescue)
                    self._lock.wait(wait)
                conns = slot._abandon()
                if slot.pooled:
                    self._workers -= 1  # the stuck worker keeps the slot; a new one takes over
                    self._spawn_workers()
                self._answering.discard(slot.name)
                self._lock.notify_all()
            log.warning(
                "target %s did not answer within %gs: cycle abandoned, connection shut down",
                slot.name,
                self.timeout,
            )
            for conn in conns:
                abort(conn)
            self._miss(slot.name, f"no answer within {self.timeout:g}s", slot)

    def _live(self, entry: tuple[float, int, str]) -> bool:
        """With the lock held: the deadline entry is the running cycle's (not a finished one's)."""
        slot = self._running.get(entry[2])
        return slot is not None and slot.seq == entry[1]

    def _miss(self, name: str, why: str, slot: Slot | None = None) -> None:
        with self._lock:
            self._reports.append((name, why, slot))
            self._lock.notify_all()

    def _report(self) -> None:
        while True:
            with self._lock:
                self._lock.wait_for(lambda: self._reports or (self._stopping and not self._running))
                if not self._reports:
                    return
                name, why, slot = self._reports.popleft()
            try:
                self.missed(name, why)
            except Exception:
                log.exception("reporting the missed cycle of %s failed", name)
            finally:
                if slot is not None:
                    with self._lock:
                        slot.reported = True
                        self._lock.notify_all()

    # -- stopping ----------------------------------------------------------------------------

    def running(self) -> list[str]:
        with self._lock:
            return sorted(self._running)

    def threads(self) -> int:
        """Threads running cycles now (pool workers + own slots), for metrics and tests."""
        with self._lock:
            own = sum(1 for s in self._running.values() if not s.pooled and s.started)
            return self._workers + own

    def wait_settled(self, timeout: float | None = None) -> bool:
        """Until every cycle has finished or been abandoned and reported (--once)."""
        with self._lock:
            self._settling += 1
            try:
                return self._lock.wait_for(
                    lambda: all(s.reported for s in self._running.values()), timeout
                )
            finally:
                self._settling -= 1

    def stop(self, timeout: float) -> list[str]:
        """No new cycles; wait up to `timeout` for running ones, then shut their connections
        and return the names still running (their threads are daemon threads)."""
        end = time.time() + timeout
        with self._lock:
            self._stopping = True
            for slot in [*self._queue, *self._own_queue]:  # never started: nothing to wait for
                if self._running.get(slot.name) is slot:
                    del self._running[slot.name]
            self._queue.clear()
            self._own_queue.clear()
            self._lock.notify_all()
            self._work.notify_all()
            self._own_work.notify_all()
            while self._running and time.time() < end:
                self._lock.wait(max(0.0, end - time.time()))
            left = list(self._running.values())
        for slot in left:
            for conn in slot._abandon():
                abort(conn)
        with self._lock:
            self._lock.notify_all()
        return sorted(s.name for s in left)
