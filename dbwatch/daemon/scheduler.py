"""The only module that knows APScheduler (3.x): one interval job per target.

The job only hands the cycle to the runner (dbwatch.daemon.runner), which gives each target
its own slot and deadline, so APScheduler's two threads are never held by a probe. coalesce
and max_instances=1 keep a late tick from bursting; first runs are staggered on a grid of
GRID seconds, so one wake of the scheduler thread hands out every target due in that slot.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Protocol

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

log = logging.getLogger(__name__)
# Measured (contrib/bench/bench_daemon.py, 500 targets): 16 threads skip cycles, 64 crowd the
# server (more skips, and 64 connections near max_connections); 32 ran every cycle. Now the
# runner's pool of permits for answering targets.
MAX_THREADS = 32
# First runs are staggered over the interval on this grid (absolute time): one wake of
# APScheduler's thread then serves all targets of a slot. Staggered to the microsecond, every
# target cost a wake of its own: 0.18-0.29 ms of scheduler and runner CPU per cycle at 1,000
# targets, 0.05 ms on the grid (issue 28; at 2,000 targets and 15 s, about 13 per slot).
GRID = 0.1


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
        func: Callable[[str], None],
        trigger: str,
        *,
        seconds: float,
        id: str,
        args: tuple[str],
        replace_existing: bool,
        misfire_grace_time: int,
        next_run_time: datetime,
    ) -> object: ...
    def start(self) -> None: ...
    def shutdown(self, wait: bool = True) -> None: ...


def _background(threads: int) -> _Sched:
    sched: _Sched = BackgroundScheduler(
        executors={"default": ThreadPoolExecutor(max_workers=threads)},
        job_defaults={"coalesce": True, "max_instances": 1},
        timezone="UTC",
    )
    return sched


def pool_size(n_targets: int, cap: int = MAX_THREADS) -> int:
    return max(1, min(n_targets, cap))


class Scheduler:
    """Runs `job(name, scheduled_at)` for every (name, interval) it is given."""

    def __init__(self, job: Callable[[str, float], object], threads: int) -> None:
        self.job = job
        self.threads = threads
        self.anchor: dict[str, tuple[float, float]] = {}  # name -> (first run, interval)
        self.missed = 0
        self._sched = _background(threads)
        self._skipped: set[str] = set()
        self._said = 0.0
        mask: int = EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES
        self._sched.add_listener(self._on_missed, mask)

    def _on_missed(self, event: _JobEvent) -> None:
        """Counted, and said at most once a minute for all targets together."""
        self.missed += 1
        now = time.time()
        self._skipped.add(event.job_id)
        if now - self._said >= 60:
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

    def _run(self, name: str) -> None:
        self.job(name, self.scheduled(name, time.time()))

    def scheduled(self, name: str, now: float) -> float:
        """When the run starting now was due (its lateness is now - this)."""
        first, interval = self.anchor.get(name, (now, 1.0))
        if now < first:
            return now
        return first + ((now - first) // interval) * interval

    def set_targets(self, targets: Iterable[tuple[str, float]]) -> None:
        """Add, re-time or remove jobs to match; a job's first run is staggered over its interval."""
        wanted = dict(targets)
        for job in self._sched.get_jobs():
            if job.id not in wanted:
                job.remove()
                self.anchor.pop(job.id, None)
        now = time.time()
        n = max(len(wanted), 1)
        for i, (name, interval) in enumerate(sorted(wanted.items())):
            old = self.anchor.get(name)
            if old is not None and old[1] == interval:
                continue
            first = _on_grid(now + 0.2 + (i / n) * min(interval, 15.0))
            self.anchor[name] = (first, interval)
            self._sched.add_job(
                self._run,
                "interval",
                seconds=interval,
                id=name,
                args=(name,),
                replace_existing=True,
                misfire_grace_time=max(1, int(interval)),
                next_run_time=_dt(first),
            )

    def start(self) -> None:
        self._sched.start()

    def shutdown(self, wait: bool = True) -> None:
        """Stop scheduling; with wait, let the running cycles finish."""
        if self._sched.running:
            self._sched.shutdown(wait=wait)


def _on_grid(ts: float) -> float:
    """The next GRID boundary at or after `ts`."""
    return math.ceil(ts / GRID) * GRID


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)
