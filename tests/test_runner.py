"""The daemon's runner without a database: one slot per target, a bounded pool for answering
targets, own threads for the others, deadlines that free the pool, bounded stop."""

from __future__ import annotations

import threading
import time
from typing import Any

from dbwatch.daemon.runner import Runner, Slot


class Jobs:
    """Cycles that block until released (a hanging target) or return at once."""

    def __init__(self, hang: set[str]) -> None:
        self.hang = hang
        self.release = threading.Event()
        self.started: list[tuple[str, float]] = []
        self.missed: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.active: dict[str, int] = {}
        self.overlap = False

    def job(self, slot: Slot) -> None:
        with self.lock:
            self.started.append((slot.name, time.time()))
            self.active[slot.name] = self.active.get(slot.name, 0) + 1
            self.overlap |= self.active[slot.name] > 1
        try:
            if slot.name in self.hang:
                self.release.wait(30)
            else:
                time.sleep(0.01)
        finally:
            with self.lock:
                self.active[slot.name] -= 1

    def on_missed(self, name: str, why: str) -> None:
        with self.lock:
            self.missed.append((name, why))

    def count(self, name: str) -> int:
        with self.lock:
            return sum(1 for n, _ in self.started if n == name)


def until(cond: Any, timeout: float = 5.0) -> bool:
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


def test_hung_pooled_targets_are_abandoned_and_the_pool_keeps_working() -> None:
    jobs = Jobs(hang={f"h{i}" for i in range(4)})
    r = Runner(jobs.job, pool=2, timeout=0.3, missed=jobs.on_missed)
    names = [f"h{i}" for i in range(4)] + ["ok"]
    for n in names:
        r.answered(n, True)  # all were answering: all in the 2-worker pool
    try:
        for n in names:
            r.submit(n, time.time())
        # two hung cycles take both workers; at 0.3 s they are abandoned, two new workers
        # take the next two, and then the healthy one runs
        assert until(lambda: jobs.count("ok") == 1), jobs.started
        assert until(lambda: {n for n, _ in jobs.missed} == {f"h{i}" for i in range(4)})
        assert all("no answer within" in why for _, why in jobs.missed)
        assert until(lambda: "ok" not in r.running())
        r.submit("ok", time.time())
        assert until(lambda: jobs.count("ok") == 2)
        assert not r.submit("h0", time.time())  # still hanging: no second cycle on it
        assert until(lambda: ("h0", "the previous cycle still hangs past its deadline")
                     in jobs.missed)
        assert not jobs.overlap
    finally:
        jobs.release.set()
        assert r.stop(2.0) == []


def test_unanswering_targets_run_beside_the_pool() -> None:
    jobs = Jobs(hang={f"h{i}" for i in range(10)})
    r = Runner(jobs.job, pool=1, timeout=30.0, missed=jobs.on_missed)
    try:
        for i in range(10):
            # never answered: own-lane threads
            r.submit(f"h{i}", time.time())
        assert until(lambda: len(jobs.started) == 10)
        t0 = time.time()
        r.submit("ok", t0)
        assert until(lambda: jobs.count("ok") == 1, 2.0)
        started = next(t for n, t in jobs.started if n == "ok")
        assert started - t0 < 0.5
        assert r.threads() >= 11
    finally:
        jobs.release.set()
        r.stop(2.0)


def test_a_queued_tick_of_a_healthy_target_is_not_a_miss() -> None:
    """Overload (all workers busy) delays healthy targets; it never calls them not answering."""
    jobs = Jobs(hang={"busy"})
    r = Runner(jobs.job, pool=1, timeout=30.0, missed=jobs.on_missed)
    r.answered("busy", True)
    r.answered("ok", True)
    try:
        r.submit("busy", time.time())
        assert until(lambda: jobs.count("busy") == 1)
        assert r.submit("ok", time.time())  # queued behind the busy worker
        assert not r.submit("ok", time.time())  # the tick is skipped ...
        time.sleep(0.1)
        assert jobs.missed == []  # ... and not reported as a missed cycle
        assert r.skipped == 1
    finally:
        jobs.release.set()
        r.stop(2.0)


def test_stop_is_bounded_whatever_runs() -> None:
    jobs = Jobs(hang={"h"})
    r = Runner(jobs.job, pool=2, timeout=60.0, missed=jobs.on_missed)
    r.submit("h", time.time())
    assert until(lambda: jobs.count("h") == 1)
    t0 = time.time()
    left = r.stop(0.5)
    assert left == ["h"]
    assert time.time() - t0 < 1.5
    assert not r.submit("x", time.time())
    jobs.release.set()


def test_wait_settled_waits_for_queued_and_reported_cycles() -> None:
    jobs = Jobs(hang={"h"})
    r = Runner(jobs.job, pool=1, timeout=0.3, missed=jobs.on_missed)
    for n in ("h", "a", "b"):
        r.answered(n, True)
        r.submit(n, time.time())
    assert r.wait_settled(5.0)
    assert jobs.count("a") == 1 and jobs.count("b") == 1
    assert [n for n, _ in jobs.missed] == ["h"]
    jobs.release.set()
    r.stop(1.0)


def test_a_slots_targets_submitted_at_once_keep_one_slot_each() -> None:
    """submit_all (a slot of the grid at once): a target whose cycle still runs is skipped
    (counted, and missed if it hangs), the others start, pooled and own-lane alike, and a
    name given twice starts once."""
    jobs = Jobs(hang={"stuck"})
    r = Runner(jobs.job, pool=2, timeout=0.4, missed=jobs.on_missed)
    for name in ("stuck", "a", "b"):
        r.answered(name, True)
    try:
        assert r.submit_all(["stuck"], time.time()) == 1
        assert until(lambda: jobs.count("stuck") == 1)
        # "new" has not answered yet: its own lane, beside the pool
        assert r.submit_all(["stuck", "a", "b", "new", "a"], time.time()) == 3
        assert r.skipped == 2
        assert until(lambda: all(jobs.count(n) == 1 for n in ("a", "b", "new")))
        assert until(lambda: "stuck" in {n for n, _ in jobs.missed})  # its deadline passed
        # the stuck cycle hangs past its deadline: the next submit says so, the others run
        assert r.submit_all(["a", "stuck"], time.time()) == 1
        assert until(lambda: jobs.count("a") == 2)
        assert until(lambda: sum(1 for n, _ in jobs.missed if n == "stuck") == 2)
        assert jobs.count("stuck") == 1 and not jobs.overlap
    finally:
        jobs.release.set()
        r.stop(2.0)


def test_a_finished_cycles_slot_is_not_kept_by_its_deadline() -> None:
    """The deadlines keep (deadline, seq, name), not the Slot: a cycle that ended in time
    leaves nothing behind for the garbage collector to age (its deadline is 30 s away)."""
    import weakref

    refs: list[weakref.ref[Slot]] = []
    done = threading.Event()

    def job(slot: Slot) -> None:
        refs.append(weakref.ref(slot))
        time.sleep(0.3)  # the watchdog, woken by its deadline, sees it running and sleeps on
        done.set()

    r = Runner(job, pool=1, timeout=30.0, missed=lambda name, why: None)
    r.answered("a", True)
    try:
        assert r.submit("a", time.time())
        assert done.wait(5)
        assert until(lambda: r.running() == [])
        assert until(lambda: refs[0]() is None)  # freed by its reference count, at once
        done.clear()
        assert r.submit("a", time.time()) and done.wait(5)  # and the next cycle runs
    finally:
        r.stop(2.0)


def test_cycle_threads_are_batch_threads() -> None:
    """Pool and own-lane threads are SCHED_BATCH (Linux): woken, they do not preempt the
    thread that woke them (dbwatch/daemon/batch.py)."""
    import os

    import pytest

    if not hasattr(os, "sched_getscheduler") or not hasattr(os, "SCHED_BATCH"):
        pytest.skip("no scheduling policies here")
    seen: dict[str, int] = {}

    def job(slot: Slot) -> None:
        seen[slot.name] = os.sched_getscheduler(0)

    r = Runner(job, pool=2, timeout=5.0, missed=lambda name, why: None)
    r.answered("pooled", True)  # "own" has not answered: its own lane
    try:
        assert r.submit_all(["pooled", "own"], time.time()) == 2
        assert until(lambda: len(seen) == 2)
        assert seen == {"pooled": os.SCHED_BATCH, "own": os.SCHED_BATCH}
        assert os.sched_getscheduler(0) != os.SCHED_BATCH  # the caller's thread as it was
    finally:
        r.stop(2.0)


def _pool_threads(jobs: Jobs, names: list[str]) -> dict[str, str]:
    return {n: t for n, t in getattr(jobs, "threads", {}).items() if n in names}


class ThreadJobs(Jobs):
    """Jobs that also note which thread ran each cycle, and how long the slow ones hang."""

    def __init__(self, hang: set[str], quick: bool = False) -> None:
        super().__init__(hang)
        self.threads: dict[str, str] = {}
        self.quick = quick  # the others return at once (else after 10 ms)

    def job(self, slot: Slot) -> None:
        with self.lock:
            self.threads[slot.name] = threading.current_thread().name
            if self.quick and slot.name not in self.hang:
                self.started.append((slot.name, time.time()))
                return
        super().job(slot)


def test_a_slot_of_quick_cycles_wakes_few_workers() -> None:
    """A slot's quick cycles run one after another on the workers its size needs (issue 28:
    a thread hand-off per cycle was most of the kernel's share), not one worker each."""
    jobs = ThreadJobs(hang=set(), quick=True)
    r = Runner(jobs.job, pool=16, timeout=5.0, missed=jobs.on_missed)
    names = [f"q{i}" for i in range(40)]
    for name in names:
        r.answered(name, True)
    try:
        r._cycle_wall = 0.0005  # a quick pool: 40 cycles x 0.5 ms fit in SPREAD on one worker
        time.sleep(0.3)  # every worker started and waiting (a starting one takes work unasked)
        assert r.submit_all(names, time.time()) == 40
        assert until(lambda: all(jobs.count(n) == 1 for n in names))
        used = set(_pool_threads(jobs, names).values())
        assert len(used) <= 2, used  # (one more if a pop found the queue late)
        # cycles of 10 ms each: 40 on one worker would end 0.4 s after the slot's time; past
        # SPREAD more workers are woken, so the slot ends far sooner
        slow = ThreadJobs(hang=set())
        r.job = slow.job
        names2 = [f"s{i}" for i in range(40)]
        for name in names2:
            r.answered(name, True)
        at = time.time()
        assert r.submit_all(names2, at) == 40
        assert until(lambda: all(slow.count(n) == 1 for n in names2))
        with slow.lock:
            last = max(t for _, t in slow.started) - at
        assert len(set(_pool_threads(slow, names2).values())) > 2
        assert last < 0.3, last
    finally:
        r.stop(2.0)


def test_a_slot_held_by_slow_cycles_gets_workers_after_spread() -> None:
    """The few workers a slot woke are all held by slow targets: SPREAD after the slot's time
    the deadlines thread wakes a worker for each cycle still queued, so the quick ones start
    within about SPREAD, not when the slow ones end."""
    from dbwatch.daemon import runner as runner_mod

    jobs = ThreadJobs(hang={"slow"})
    r = Runner(jobs.job, pool=8, timeout=5.0, missed=jobs.on_missed)
    names = ["slow"] + [f"q{i}" for i in range(5)]
    for name in names:
        r.answered(name, True)
    try:
        r._cycle_wall = 0.0001  # one worker woken for the slot
        time.sleep(0.3)  # every worker started and waiting (a starting one takes work unasked)
        at = time.time()
        assert r.submit_all(names, at) == 6
        assert until(lambda: all(jobs.count(n) == 1 for n in names), timeout=3.0)
        with jobs.lock:
            starts = {n: t - at for n, t in jobs.started}
        assert max(starts.values()) < runner_mod.SPREAD + 0.5, starts  # slow still hangs
        assert jobs.active.get("slow") == 1
    finally:
        jobs.release.set()
        r.stop(2.0)
