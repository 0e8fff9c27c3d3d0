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


class Threads(Recorder):
    """A Recorder that also remembers which thread handed each cycle over."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []

    def __call__(self, name: str, scheduled: float) -> bool:
        with self.cv:
            self.threads.append(threading.current_thread().name)
        return super().__call__(name, scheduled)


def _look_at_all(s: Scheduler, rec: Recorder, n: int) -> None:
    """Every first look handed out and ended (the targets join their slots' groups)."""
    for _ in range(200):
        for name in rec.names():
            s.ended(name, time.time() - 60.0)  # began long ago: the next phase, not 1/2 later
        if s.awaiting_first_look() == 0:
            return
        time.sleep(0.02)
    raise AssertionError(f"{s.awaiting_first_look()} first looks left of {n}")


def test_a_slots_targets_share_one_job_each_on_its_own_instants(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Targets due on the same slot of the grid are one APScheduler job, run in the
    scheduler's own thread; each target is still handed over once per run of its slot, at
    its own anchor's instants (no burst, nothing twice)."""
    monkeypatch.setattr(sched_mod, "GRID", 0.5)
    rec = Threads()
    s = Scheduler(rec, 2, warmups=8)
    names = [f"t{i}" for i in range(8)]
    s.set_targets((n, 1.0) for n in names)  # phases 0.125 s apart: two targets per slot
    s.start()
    try:
        rec.wait_for(8)
        _look_at_all(s, rec, 8)
        firsts = len(rec.names())
        jobs = s._sched.get_jobs()
        assert 2 <= len(jobs) <= 5, [j.id for j in jobs]  # 8 targets, a job per slot
        assert len({sched_mod._group_key(a, i) for a, i in s.anchor.values()}) == len(jobs)
        rec.wait_for(firsts + 3 * 8, timeout=10.0)
    finally:
        s.shutdown(wait=False)
    with rec.cv:
        runs = rec.calls[firsts:]
        threads = rec.threads[firsts:]
    assert set(threads) == {"APScheduler"}, set(threads)  # no executor thread in between
    for name in names:
        first, interval = s.anchor[name]
        mine = [at for n, at in runs if n == name]
        assert mine, name
        assert len(set(mine)) == len(mine), (name, mine)  # never twice for one instant
        for at in mine:
            k = (at - first) / interval
            assert at >= first - 1e-6 and abs(k - round(k)) < 1e-6, (name, at, first)


def test_a_target_joining_a_slot_waits_for_its_own_first_run() -> None:
    """Groups by hand (no clock): a member that joined with a later first run is not handed
    over before it; one whose first run the group has passed starts at the group's next."""
    s = Scheduler(Recorder(), 2)
    (g,) = s._join("a", 100.0, 10.0, now=95.0)
    assert s._join("b", 110.0, 10.0, now=95.0) == []  # same slot: the same group
    assert s._join("c", 90.0, 10.0, now=95.0) == []
    assert s.anchor["c"] == (100.0, 10.0)  # not in the past: the group's next run
    assert s._join("d", 105.0, 10.0, now=95.0) != []  # another phase: another group
    assert g.due_at(100.02) == 100.0 and g.due_at(111.0) == 110.0
    got: list[tuple[list[str], float]] = []
    s.jobs = lambda names, at: got.append((names, at))
    s._hand_over(g.job_id, 100.01)
    s._hand_over(g.job_id, 110.01)
    assert got == [(["a", "c"], 100.0), (["a", "b", "c"], 110.0)]


def test_an_emptied_slot_loses_its_job_and_a_new_one_gets_a_new_job() -> None:
    rec = Recorder()
    s = Scheduler(rec, 2, warmups=4)
    s.set_targets([("a", 30.0), ("b", 30.0)])
    s.start()
    try:
        rec.wait_for(2)
        _look_at_all(s, rec, 2)
        before = {j.id for j in s._sched.get_jobs()}
        assert len(before) == 2  # 15 s apart: two slots
        s.set_targets([("a", 30.0)])
        after = {j.id for j in s._sched.get_jobs()}
        assert len(after) == 1 and after < before and "b" not in s.anchor
        s.set_targets([("a", 45.0)])  # re-timed: out of its old group, into a new one
        (job,) = s._sched.get_jobs()
        assert job.id not in before and s.anchor["a"][1] == 45.0
        s.set_targets([])
        assert s._sched.get_jobs() == [] and not s.anchor
    finally:
        s.shutdown(wait=False)


def test_the_end_of_the_start_up_is_said_once() -> None:
    """on_looked (the daemon settles its heap then): when the last first look pending ended."""
    rec = Recorder()
    s = Scheduler(rec, 2, warmups=4)
    said: list[int] = []
    s.on_looked = lambda: said.append(s.awaiting_first_look())
    s.set_targets((f"t{i}", 30.0) for i in range(3))
    s.start()
    try:
        rec.wait_for(3)
        s.ended("t0", time.time())
        s.ended("t1", time.time())
        assert said == []
        s.ended("t2", time.time())
        s.ended("t2", time.time())  # a later cycle's end: nothing more
        assert said == [0]
    finally:
        s.shutdown(wait=False)


def test_a_slot_emptied_before_its_job_was_added_leaves_no_job() -> None:
    """A first look's end (join: a new group) racing a reload that removes the target
    (leave: the group emptied): whichever order APScheduler hears them in, no job is left."""
    s = Scheduler(Recorder(), 2)
    with s._cv:
        added = s._join("a", 100.0, 10.0, now=95.0)
        gone = s._leave("a")
    s._apply(gone, [])  # the removal first: nothing to remove yet
    s._apply([], added)  # then the addition, of a group that no longer exists
    assert s._sched.get_jobs() == []
    with s._cv:
        added = s._join("b", 100.0, 10.0, now=95.0)
    s._apply([], added)
    assert [j.id for j in s._sched.get_jobs()] == [added[0].job_id]  # a live one stays
