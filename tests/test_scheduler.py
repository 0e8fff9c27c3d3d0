"""The scheduler's first looks (dbwatch.daemon.scheduler): a target's first cycle runs at the
start-up's rate, at most `warmups` at once, and its interval job starts after it, on its phase.
No database: the job is a recorder; what is asserted is what gets handed out, and when."""

from __future__ import annotations

import threading
import time

import pytest

from dbwatch.daemon import scheduler as sched_mod
from dbwatch.daemon.metrics import DaemonCollector
from dbwatch.daemon.notify import status_text
from dbwatch.daemon.scheduler import Scheduler


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, float]] = []
        self.cv = threading.Condition()

    def __call__(self, name: str, scheduled: float) -> bool:
        with self.cv:
            self.calls.append((name, scheduled))
            self.cv.notify_all()
        return True

    def wait_for(self, n: int, timeout: float = 5.0) -> list[str]:
        with self.cv:
            assert self.cv.wait_for(lambda: len(self.calls) >= n, timeout), self.calls
            return [c[0] for c in self.calls]

    def names(self) -> list[str]:
        with self.cv:
            return [c[0] for c in self.calls]


def test_first_looks_at_most_warmups_at_once_then_on_their_interval() -> None:
    rec = Recorder()
    s = Scheduler(rec, 2, warmups=3)
    s.set_targets((f"t{i}", 60.0) for i in range(10))
    assert s.awaiting_first_look() == 10
    s.start()
    try:
        first = rec.wait_for(3)
        time.sleep(0.3)
        assert rec.names() == first, "a fourth first look started before one ended"
        assert s.awaiting_first_look() == 10  # handed out is not done
        assert not s.anchor  # no interval job before the first look ended
        began = time.time()
        s.ended(first[0], began)
        assert len(rec.wait_for(4)) == 4
        # the interval job: on the target's phase, at least half an interval after the look
        start, interval = s.anchor[first[0]]
        assert interval == 60.0
        assert start >= began + 30.0
        assert start <= began + 60.0 + 15.0 + 1.0
        s.ended(first[0], time.time())  # a later cycle's end changes nothing
        assert s.anchor[first[0]] == (start, interval)
        for _ in range(30):
            for name in rec.names():
                s.ended(name, time.time())
            if s.awaiting_first_look() == 0:
                break
            time.sleep(0.05)
        assert s.awaiting_first_look() == 0
        assert sorted(rec.names()) == sorted(f"t{i}" for i in range(10))  # each once
        assert set(s.anchor) == {f"t{i}" for i in range(10)}
        assert s.first_looks_took is not None and s.first_looks_took >= 0
        # phases stay staggered over the interval (15 s at most): not all on one slot
        assert len({round(a % 60.0, 1) for a, _ in s.anchor.values()}) >= 5
    finally:
        s.shutdown(wait=False)


def test_a_look_that_does_not_end_stops_holding_its_permit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dead target's first look (no answer until its deadline) cannot stall the start-up."""
    monkeypatch.setattr(sched_mod, "WARM_HOLD", 0.3)
    rec = Recorder()
    s = Scheduler(rec, 2, warmups=1)
    s.set_targets((f"t{i}", 30.0) for i in range(3))
    s.start()
    try:
        t0 = time.time()
        assert rec.wait_for(3, timeout=5.0) == ["t0", "t1", "t2"]  # phase order
        assert time.time() - t0 >= 0.55  # two holds of 0.3 s passed between them
        assert s.awaiting_first_look() == 3  # none ended: all still awaiting
    finally:
        s.shutdown(wait=False)


def test_targets_removed_or_added_while_waiting() -> None:
    rec = Recorder()
    s = Scheduler(rec, 2, warmups=1)
    s.set_targets([("a", 30.0), ("b", 30.0), ("c", 30.0)])
    s.set_targets([("a", 30.0), ("c", 30.0), ("d", 20.0)])  # b gone before its look
    assert s.awaiting_first_look() == 3
    s.start()
    try:
        for _ in range(3):
            names = rec.wait_for(len(rec.names()) or 1)
            s.ended(names[-1], time.time())
            time.sleep(0.05)
        assert sorted(rec.wait_for(3)) == ["a", "c", "d"]
        assert s.anchor["d"][1] == 20.0
        # re-timing a running target moves its job at once (no new first look)
        s.set_targets([("a", 30.0), ("c", 45.0), ("d", 20.0)])
        assert s.anchor["c"][1] == 45.0
        time.sleep(0.2)
        assert sorted(rec.names()) == ["a", "c", "d"]
    finally:
        s.shutdown(wait=False)


def test_a_look_the_runner_refuses_still_starts_the_schedule() -> None:
    calls: list[str] = []

    def refuse(name: str, scheduled: float) -> bool:
        calls.append(name)
        return False  # the runner is stopping, or the target is busy

    s = Scheduler(refuse, 2, warmups=2)
    s.set_targets([("x", 10.0)])
    s.start()
    try:
        for _ in range(50):
            if "x" in s.anchor:
                break
            time.sleep(0.02)
        assert calls == ["x"] and "x" in s.anchor and s.awaiting_first_look() == 0
    finally:
        s.shutdown(wait=False)


def test_status_and_metrics_say_how_many_await_their_first_look() -> None:
    c = DaemonCollector()
    waiting = [7]
    c.awaiting_source = lambda: waiting[0]
    assert "7 not looked at yet" in status_text(c)
    fam = {m.name: m for m in c.collect()}["dbwatch_targets_awaiting_first_look"]
    assert [s.value for s in fam.samples] == [7]
    waiting[0] = 0
    assert "not looked at" not in status_text(c)


def test_a_late_schedule_holds_the_start_up_to_one_look_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Scheduled cycles starting late (busy pool or cores) make the first looks yield: one at a
    time for YIELD_FOR s, then `warmups` again; on time, nothing changes."""
    monkeypatch.setattr(sched_mod, "YIELD_FOR", 0.6)
    rec = Recorder()
    s = Scheduler(rec, 2, warmups=4)
    s.late(0.1, time.time())  # on time: no yield
    assert s.permits(time.time()) == 4
    s.late(sched_mod.YIELD_LATE + 0.5, time.time())
    assert s.permits(time.time()) == 1
    s.set_targets((f"t{i}", 60.0) for i in range(6))
    s.start()
    try:
        assert rec.wait_for(1) == ["t0"]
        time.sleep(0.2)
        assert rec.names() == ["t0"], "a second look started while the schedule was late"
        s.ended("t0", time.time())
        assert rec.wait_for(2) == ["t0", "t1"]  # one at a time, the start-up goes on
        time.sleep(0.1)
        assert rec.names() == ["t0", "t1"]
        # the yield ends YIELD_FOR after the late cycle: up to `warmups` at once again
        assert len(rec.wait_for(5, timeout=3.0)) == 5
        assert s.permits(time.time()) == 4
    finally:
        s.shutdown(wait=False)
