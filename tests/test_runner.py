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


class Burst:
    """Cycles that record their thread and overlap; `slow` ones sleep `slow_for`."""

    def __init__(self, each: float = 0.004, slow: set[str] | None = None,
                 slow_for: float = 0.0) -> None:
        self.each, self.slow, self.slow_for = each, slow or set(), slow_for
        self.lock = threading.Lock()
        self.runs: list[tuple[str, float, float, int]] = []  # name, start, end, thread
        self.active = 0
        self.most = 0
        self.missed: list[tuple[str, str]] = []

    def job(self, slot: Slot) -> None:
        t0 = time.time()
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
        try:
            time.sleep(self.slow_for if slot.name in self.slow else self.each)
        finally:
            with self.lock:
                self.active -= 1
                self.runs.append((slot.name, t0, time.time(), threading.get_ident()))

    def on_missed(self, name: str, why: str) -> None:
        with self.lock:
            self.missed.append((name, why))

    def reset(self) -> None:
        with self.lock:
            self.runs, self.most = [], 0


def warm(r: Runner, jobs: Burst, names: list[str]) -> None:
    """Every target's first cycle here (not held to a burst: a cold cycle anyway)."""
    for n in names:
        r.answered(n, True)
        r.submit(n, time.time())
    assert r.wait_settled(5.0)
    assert until(lambda: not r.running())
    jobs.reset()


def test_a_slots_cycles_run_back_to_back_on_one_thread() -> None:
    jobs = Burst()
    r = Runner(jobs.job, pool=8, timeout=10.0, missed=jobs.on_missed, burst=1, hold=1.0)
    names = [f"t{i}" for i in range(12)]
    try:
        for n in names:  # first cycles: the pool's 8 workers at once, as before (--once)
            r.answered(n, True)
            r.submit(n, time.time())
        assert r.wait_settled(5.0) and until(lambda: not r.running())
        assert jobs.most > 1
        jobs.reset()
        due = time.time()
        for n in names:  # one slot of the grid: all due at once
            assert r.submit(n, due)
        assert until(lambda: len(jobs.runs) == 12)
        assert jobs.most == 1, "two cycles of the burst overlapped"
        assert len({t for *_, t in jobs.runs}) == 1, "the burst moved between threads"
        assert [n for n, *_ in jobs.runs] == names  # in the order they were due
        # 12 x 4 ms back to back: well inside the first LATE_STEP
        assert max(s for _, s, _, _ in jobs.runs) - due < 0.15
    finally:
        r.stop(2.0)


def test_a_burst_of_two_uses_two_threads_at_most() -> None:
    jobs = Burst()
    r = Runner(jobs.job, pool=8, timeout=10.0, missed=jobs.on_missed, burst=2, hold=1.0)
    names = [f"t{i}" for i in range(16)]
    try:
        warm(r, jobs, names)
        due = time.time()
        for n in names:
            r.submit(n, due)
        assert until(lambda: len(jobs.runs) == 16)
        assert jobs.most == 2
        assert len({t for *_, t in jobs.runs}) == 2
    finally:
        r.stop(2.0)


def test_a_hung_target_delays_its_burst_by_the_hold_at_most() -> None:
    """A dead target first in its slot: after `hold` the others go on without it; it is
    abandoned at its deadline and reported, and its worker replaced."""
    jobs = Burst(slow={"dead"}, slow_for=30.0)
    r = Runner(jobs.job, pool=4, timeout=1.5, missed=jobs.on_missed, burst=1, hold=0.2)
    names = ["dead", *(f"t{i}" for i in range(6))]
    jobs.slow_for = 0.0
    try:
        warm(r, jobs, names)
        jobs.slow_for = 30.0
        due = time.time()
        for n in names:
            r.submit(n, due)
        assert until(lambda: len([x for x in jobs.runs if x[0] != "dead"]) == 6, 3.0)
        starts = {n: s for n, s, _, _ in jobs.runs}
        assert max(starts.values()) - due < 0.2 + 0.25, starts  # the hold, not the deadline
        assert min(starts.values()) - due >= 0.2 - 0.02  # ... and no earlier: it held a permit
        # the dead one beside the rest of its burst: one permit, and one more opened by the
        # burst's lateness (0.2 s = LATE_STEP), not one thread per cycle
        assert jobs.most <= 3
        assert until(lambda: [n for n, _ in jobs.missed] == ["dead"], 3.0)
        # the next slot: the dead target is still running (skipped), the others on time
        due = time.time()
        for n in names:
            r.submit(n, due)
        assert until(lambda: len([x for x in jobs.runs if x[0] != "dead"]) == 12, 3.0)
        assert max(s for n, s, _, _ in jobs.runs[6:]) - due < 0.15
    finally:
        r.stop(0.5)


def test_a_late_queue_opens_more_permits() -> None:
    """Cycles slower than one worker can serve in a burst's span (here 40 x 60 ms, each held
    for its whole length): the cycles' measured wall opens permits for the burst to end within
    BURST_SPAN, and lateness one per LATE_STEP; every cycle runs, late < 1 s."""
    jobs = Burst(each=0.06)
    r = Runner(jobs.job, pool=16, timeout=10.0, missed=jobs.on_missed, burst=1, hold=10.0)
    names = [f"t{i}" for i in range(40)]
    try:
        warm(r, jobs, names)
        due = time.time()
        for n in names:
            r.submit(n, due)
        assert until(lambda: len(jobs.runs) == 40, 5.0)
        late = max(s for _, s, _, _ in jobs.runs) - due
        assert late < 1.0, late  # one at a time: 2.4 s
        # 40 x 60 ms in 0.2 s: 12 permits (+1 per LATE_STEP late), not the pool's 16
        assert 1 < jobs.most <= 14, jobs.most
        assert jobs.missed == []
    finally:
        r.stop(2.0)
