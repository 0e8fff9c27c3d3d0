"""The only module that knows APScheduler (3.x): one interval job per slot of the grid.

Each target's cycles are due on its phase, on a grid of GRID seconds (absolute time); the
targets sharing an interval and a phase are one group, and the group is one APScheduler
interval job: one run hands every target of the slot to the runner (dbwatch.daemon.runner),
which gives each its own slot and deadline, so APScheduler's thread is never held by a probe.
The job runs in APScheduler's own thread (its `debug` executor: no executor thread between
the scheduler's wake and the runner's queue); it only queues cycles. coalesce and
max_instances=1 keep a late tick from bursting. Per target-cycle this was one APScheduler
run (job store update, next fire time, events) and one executor thread's wake; at 1,000
targets on 15 s it is now one run a second for ~67 targets and no executor thread (issue 28;
docs/cycle-cost.md "The scheduler's hand-off", "A one-second grid").

A target's first look is not due at a time: it opens the session and reads the catalog, which
costs 10-20 times a steady cycle (a new server backend, cold catalog caches). First looks run
as soon as one of WARMUPS start-up permits is free — in the order of the targets' phases —
and the target joins its slot's group after it, on its phase. Scheduled at their phase instead,
2,000 first looks in one interval were a backlog that made every cycle of the first 30 s late
by up to 15 s (issue 28; contrib/bench/RESULTS-fleet.md §7); taken at the rate the machine
gives, the scheduled cycles stay on time and the start-up's length is said (log, STATUS=,
`dbwatch_targets_awaiting_first_look`).

Lock order: APScheduler runs the group job holding its job-store lock, and the job takes this
module's condition; so nothing here calls APScheduler while holding that condition.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Protocol

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED
from apscheduler.executors.debug import DebugExecutor
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.background import BackgroundScheduler

log = logging.getLogger(__name__)
# Measured (contrib/bench/bench_daemon.py, 500 targets): 16 threads skip cycles, 64 crowd the
# server (more skips, and 64 connections near max_connections); 32 ran every cycle. Now the
# runner's pool of permits for answering targets.
MAX_THREADS = 32
# First runs are staggered over the interval on this grid (absolute time): one wake of
# APScheduler's thread then serves all targets of a slot. Staggered to the microsecond, every
# target cost a wake of its own: 0.18-0.29 ms of scheduler and runner CPU per cycle at 1,000
# targets, 0.05 ms on a 0.1 s grid. On a 1 s grid a slot's cycles run close together (warm
# caches, few thread hand-offs: the runner's SPREAD) and APScheduler wakes once a second: on a
# quiet machine 1.36 -> 0.62-0.80 ms of dbwatch CPU per cycle at 500 targets, lateness p95
# 0.003 -> 0.04-0.05 s; 0.17 s at 2,000 (issue 28; docs/cycle-cost.md "A one-second grid").
GRID = 1.0
# First looks running at once. Each is CPU on both sides (a backend forked, its caches filled):
# 8 keep two cores busy while leaving the pool's scheduled cycles their turn.
WARMUPS = 8
# A first look running longer than this stops holding its permit (a target that does not
# answer, or is slow to): the next one starts, so dead targets cannot stall the start-up.
WARM_HOLD = 2.0
# The start-up yields to the schedule: a cycle that starts YIELD_LATE s or more after it was
# due (the pool or the cores are busy) holds the first looks to one at a time for YIELD_FOR s.
# On a machine 2-3x slower than the one WARMUPS was measured on, 8 looks at once kept two cores
# saturated for 100 s at 2,000 targets and the scheduled cycles of that time ran up to 2.5 s
# late (contrib/bench/RESULTS-fleet.md §9); one at a time the start-up still progresses.
YIELD_LATE = 0.25
YIELD_FOR = 1.0


class _JobEvent(Protocol):
    job_id: str


class _Job(Protocol):
    id: str

    def remove(self) -> None: ...


class _Sched(Protocol):
    """What this module uses of APScheduler's BackgroundScheduler (the library is untyped)."""

    running: bool

    def add_listener(self, callback: Callable[[_JobEvent], None], mask: int) -> None: ...
    def get_jobs(self) -> list[_Job]: ...
    def add_job(
        self,
        func: Callable[[int], None],
        trigger: str,
        *,
        seconds: float,
        id: str,
        args: tuple[int],
        replace_existing: bool,
        misfire_grace_time: int,
        next_run_time: datetime,
    ) -> object: ...
    def remove_job(self, job_id: str) -> None: ...
    def start(self) -> None: ...
    def shutdown(self, wait: bool = True) -> None: ...


def _background() -> _Sched:
    """The group jobs run in the scheduler's thread: they only queue cycles (never block)."""
    sched: _Sched = BackgroundScheduler(
        executors={"default": DebugExecutor()},
        job_defaults={"coalesce": True, "max_instances": 1},
        timezone="UTC",
    )
    return sched


class _Group:
    """The targets due on one slot of the grid (one interval, one phase): one APScheduler job.
    `members`: name -> its first due run (a target that joined after the group's job began
    waits for its own)."""

    __slots__ = ("first", "interval", "job_id", "members")

    def __init__(self, first: float, interval: float, job_id: str) -> None:
        self.first = first
        self.interval = interval
        self.job_id = job_id
        self.members: dict[str, float] = {}

    def due_at(self, now: float) -> float:
        """The run of this group due at `now` (its start when not begun yet)."""
        if now < self.first:
            return self.first
        return self.first + ((now - self.first) // self.interval) * self.interval

    def next_at(self, now: float) -> float:
        """The group's next run from `now` on."""
        at = self.due_at(now)
        return at if at >= now else at + self.interval


def _group_key(first: float, interval: float) -> tuple[float, float]:
    """Targets whose runs fall on the same instants share a key: (interval, phase mod it)."""
    offset = round(first % interval, 3)
    return (interval, 0.0 if offset >= round(interval, 3) else offset)


def pool_size(n_targets: int, cap: int = MAX_THREADS) -> int:
    return max(1, min(n_targets, cap))


class Scheduler:
    """Runs `job(name, scheduled_at)` (or `jobs(names, scheduled_at)` for a slot's targets at
    once) for every (name, interval) it is given; first looks always by `job`."""

    def __init__(
        self,
        job: Callable[[str, float], object],
        threads: int,
        warmups: int = WARMUPS,
        jobs: Callable[[list[str], float], object] | None = None,
    ) -> None:
        self.job = job
        # a slot's targets at once (Runner.submit_all), else job() for each
        self.jobs = jobs
        self.threads = threads  # the runner's workers, for the messages
        self.warmups = warmups
        self.anchor: dict[str, tuple[float, float]] = {}  # name -> (first run, interval)
        self.missed = 0
        self._sched = _background()
        self._skipped: set[str] = set()
        self._said = 0.0
        mask: int = EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES
        self._sched.add_listener(self._on_missed, mask)
        # the slots' groups: key -> group, a target's key, the groups by their job's id
        self._groups: dict[tuple[float, float], _Group] = {}
        self._group_of: dict[str, tuple[float, float]] = {}
        self._by_job: dict[str, _Group] = {}
        self._jobs = 0  # job ids are never reused: a group emptied and made again is a new job
        # first looks: waiting (in phase order) or running; name -> (phase, interval)
        self._first: dict[str, tuple[float, float]] = {}
        self._waiting: deque[str] = deque()
        self._looking: dict[str, float] = {}  # first looks handed out: name -> when
        self._cv = threading.Condition()
        self._stopping = False
        self._dispatcher: threading.Thread | None = None
        self._start_began = 0.0
        self._late_at = 0.0  # when a cycle last started YIELD_LATE late (see late())
        self.first_looks_took: float | None = None  # the last start-up's length, once done
        # called (in the thread that ended it) when the last first look pending has ended
        self.on_looked: Callable[[], object] | None = None

    def _on_missed(self, event: _JobEvent) -> None:
        """Counted per target, and said at most once a minute for all targets together."""
        with self._cv:
            group = self._by_job.get(event.job_id)
            names = list(group.members) if group is not None else []
        self.missed += len(names)
        now = time.time()
        self._skipped.update(names)
        if now - self._said >= 60 and self._skipped:
            names = sorted(self._skipped)
            log.warning(
                "%d targets skipped a cycle in the last minute because the previous one "
                "was still running or started too late (%s%s): slow or dead targets, "
                "or too many targets for %d threads",
                len(names),
                ", ".join(names[:5]),
                ", …" if len(names) > 5 else "",
                self.threads,
            )
            self._said, self._skipped = now, set()

    def _run(self, job_no: int) -> None:
        """A group's run (APScheduler's thread): every member due now goes to the runner."""
        self._hand_over(f"slot-{job_no}", time.time())

    def _hand_over(self, job_id: str, now: float) -> None:
        with self._cv:
            group = self._by_job.get(job_id)
            if group is None:  # emptied meanwhile
                return
            due_at = group.due_at(now)
            # a member that joined after the group began waits for its own first run
            until = due_at + min(GRID, group.interval) / 2
            names = [n for n, first in group.members.items() if first <= until]
        if self.jobs is not None and names:
            try:
                self.jobs(names, due_at)
            except Exception:
                log.exception("the cycles of %s could not be handed to the runner", names[:5])
            return
        for name in names:
            try:
                self.job(name, due_at)
            except Exception:  # one target's hand-off never stops the others of its slot
                log.exception("cycle of %s could not be handed to the runner", name)

    def set_targets(self, targets: Iterable[tuple[str, float]]) -> None:
        """Add, re-time or remove targets to match. A new target waits for its first look (see
        the module's doc); its phase is staggered over its interval. A re-timed one keeps
        running, from its new phase."""
        wanted = dict(targets)
        now = time.time()
        n = max(len(wanted), 1)
        new: list[str] = []
        gone: list[str] = []  # emptied groups' jobs, removed outside the lock
        added: list[_Group] = []
        with self._cv:
            for name in [m for m in self.anchor if m not in wanted]:
                del self.anchor[name]
                gone += self._leave(name)
            for name in [m for m in self._first if m not in wanted]:
                del self._first[name]
                self._looking.pop(name, None)
            self._waiting = deque(m for m in self._waiting if m in self._first)
            for i, (name, interval) in enumerate(sorted(wanted.items())):
                phase = _on_grid(now + 0.2 + (i / n) * min(interval, 15.0))
                first = self._first.get(name)
                if first is not None:
                    self._first[name] = (first[0], interval)
                    continue
                old = self.anchor.get(name)
                if old is None:
                    self._first[name] = (phase, interval)
                    new.append(name)
                elif old[1] != interval:
                    gone += self._leave(name)
                    added += self._join(name, phase, interval, now)
            if new:
                if not self._looking and not self._waiting:
                    self._start_began, self.first_looks_took = now, None
                self._waiting.extend(sorted(new, key=lambda m: self._first[m][0]))
                self._cv.notify_all()
        self._apply(gone, added)

    def _join(self, name: str, first: float, interval: float, now: float) -> list[_Group]:
        """With the lock held: `name` runs from `first` on, every `interval`, in its slot's
        group; the group if it is new (its job is to be added)."""
        key = _group_key(first, interval)
        group = self._groups.get(key)
        made = []
        if group is None:
            self._jobs += 1
            group = _Group(first, interval, f"slot-{self._jobs}")
            self._groups[key] = group
            self._by_job[group.job_id] = group
            made.append(group)
        else:  # the group's next run may be later than `first` (same instant mod interval)
            first = max(first, group.next_at(now))
        group.members[name] = first
        self._group_of[name] = key
        self.anchor[name] = (first, interval)
        return made

    def _leave(self, name: str) -> list[str]:
        """With the lock held: `name` leaves its group; the group's job id if it emptied."""
        key = self._group_of.pop(name, None)
        group = self._groups.get(key) if key is not None else None
        if key is None or group is None:
            return []
        group.members.pop(name, None)
        if group.members:
            return []
        del self._groups[key]
        del self._by_job[group.job_id]
        return [group.job_id]

    def _apply(self, gone: list[str], added: list[_Group]) -> None:
        """APScheduler's side of _join/_leave, called without the lock (see the module doc)."""
        for job_id in gone:
            try:
                self._sched.remove_job(job_id)
            except JobLookupError:
                pass
        for group in added:
            self._sched.add_job(
                self._run,
                "interval",
                seconds=group.interval,
                id=group.job_id,
                args=(int(group.job_id.removeprefix("slot-")),),
                replace_existing=True,
                misfire_grace_time=max(1, int(group.interval)),
                next_run_time=_dt(group.first),
            )
            with self._cv:  # emptied meanwhile (its remove_job came first): no job left over
                emptied = self._by_job.get(group.job_id) is not group
            if emptied:
                try:
                    self._sched.remove_job(group.job_id)
                except JobLookupError:
                    pass

    # -- first looks -------------------------------------------------------------------------

    def awaiting_first_look(self) -> int:
        """Targets whose first look has not ended yet (waiting for a permit, or running)."""
        with self._cv:
            return len(self._first)

    def ended(self, name: str, started: float) -> None:
        """A cycle of `name` ended (or was abandoned). After its first look, it joins its slot's
        group: on its phase, at least half an interval after the first look began."""
        if name not in self._looking:  # every cycle calls this: most return here
            return
        with self._cv:
            if self._looking.pop(name, None) is None:
                return
            phase, interval = self._first.pop(name)
            self._cv.notify_all()
            done = not self._first
            now = time.time()
            if done:
                self.first_looks_took = now - self._start_began
            # (and not in the past: a first look that ran into its deadline ended late)
            after = max(started + interval / 2, now + GRID)
            k = max(0, math.ceil((after - phase) / interval))
            added = self._join(name, phase + k * interval, interval, now)
        self._apply([], added)
        if done:
            log.info("first look at every target done in %.1fs", self.first_looks_took or 0.0)
            if self.on_looked is not None:
                self.on_looked()

    def late(self, lateness: float, now: float) -> None:
        """A cycle started `lateness` s after it was due (the daemon says so of every cycle):
        from YIELD_LATE on, the start-up runs one first look at a time for YIELD_FOR s."""
        if lateness >= YIELD_LATE:
            self._late_at = now

    def permits(self, now: float) -> int:
        """First looks that may run at once now: `warmups`, or 1 while the schedule is late."""
        return 1 if now - self._late_at < YIELD_FOR else self.warmups

    def _dispatch(self) -> None:
        """Hands out first looks: at most permits() running at once, counting only those that
        have run less than WARM_HOLD."""
        while True:
            with self._cv:
                while True:
                    if self._stopping:
                        return
                    now = time.time()
                    held = [t for t in self._looking.values() if now - t < WARM_HOLD]
                    limit = self.permits(now)
                    if self._waiting and len(held) < limit:
                        name = self._waiting.popleft()
                        self._looking[name] = now
                        break
                    wait = WARM_HOLD - (now - min(held)) if held and self._waiting else None
                    if self._waiting and limit < self.warmups:  # the yield ends: look again
                        until = self._late_at + YIELD_FOR - now
                        wait = until if wait is None else min(wait, until)
                    self._cv.wait(max(wait, 0.01) if wait is not None else None)
            try:
                taken = self.job(name, now)
            except Exception:
                log.exception("first look of %s could not start", name)
                taken = False
            if taken is False:  # not started (runner stopping): nothing will end it
                self.ended(name, now)

    def start(self) -> None:
        self._sched.start()
        self._dispatcher = threading.Thread(
            target=self._dispatch, name="dbwatch-first-looks", daemon=True
        )
        self._dispatcher.start()

    def shutdown(self, wait: bool = True) -> None:
        """Stop scheduling; with wait, let the running cycles finish."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        if self._sched.running:
            self._sched.shutdown(wait=wait)


def _on_grid(ts: float) -> float:
    """The next GRID boundary at or after `ts`."""
    return math.ceil(ts / GRID) * GRID


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)
