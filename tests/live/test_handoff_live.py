"""The scheduler's hand-off at work (dbwatch.daemon.scheduler, runner, memory): the real
daemon, scheduler and runner against the local PostgreSQL, 8 targets on a coarse grid so that
two share each slot.

- a slot's targets are one APScheduler job, and every target still gets one cycle per run of
  its slot, at its own instants, never two for one instant, each cycle's lateness recorded;
- after the start-up (every first look done) the heap is settled (frozen), and again at a
  reload;
- a reload that removes a slot's targets removes its job; a target it adds gets its first
  look and then its cycles; the removed ones get no more.
"""

from __future__ import annotations

import gc
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import PG_URL

from dbwatch.daemon import scheduler as sched_mod
from dbwatch.daemon.loop import Daemon, load_setup
from dbwatch.daemon.runner import Slot
from dbwatch.daemon.state import State
from dbwatch.pipeline import TargetResult


class Recording(Daemon):
    """The real daemon; remembers each cycle: target, due, started."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.runs: list[tuple[str, float, float]] = []
        self._rec = threading.Lock()

    def cycle(self, name: str, scheduled: float, slot: Slot | None = None) -> TargetResult | None:
        with self._rec:
            self.runs.append((name, scheduled, time.time()))
        return super().cycle(name, scheduled, slot)

    def count(self, name: str, since: float = 0.0) -> int:
        with self._rec:
            return sum(1 for n, _, t in self.runs if n == name and t >= since)


def write(cfg: Path, names: list[str], url: str) -> None:
    lines = ['[daemon]\ncycle_timeout = "3s"\n']
    for name in names:
        lines.append(f'[[targets]]\nname = "{name}"\nurl = "{url}"\ninterval = "2s"\n')
    cfg.write_text("\n".join(lines))


def wait(cond: Any, timeout: float, what: str) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def unfrozen() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()  # the rest of this test process collects as before
    gc.set_threshold(*threshold)


def test_slots_share_a_job_cycles_keep_their_instants_reload_and_settle(
    tmp_path: Path, own_pg_db: str, monkeypatch: pytest.MonkeyPatch, unfrozen: None
) -> None:
    monkeypatch.setattr(sched_mod, "GRID", 0.5)  # 8 phases 0.25 s apart: 2 targets a slot
    url = f"{PG_URL.rsplit('/', 1)[0]}/{own_pg_db}"
    names = [f"t{i}" for i in range(8)]
    cfg = tmp_path / "dbwatch.toml"
    write(cfg, names, url)
    setup = load_setup(cfg)
    state = State(tmp_path / "state.db")
    d = Recording(cfg, state, setup)
    d.memory.start()  # as run_forever does
    runner = d._new_runner(d._slot_job)
    sched = d._new_scheduler(runner)
    try:
        wait(lambda: sched.awaiting_first_look() == 0, 30, "every first look")
        wait(lambda: d.memory.settles >= 1, 10, "the heap settled after the start-up")
        assert gc.get_freeze_count() > 0
        looked = time.time()
        wait(lambda: min(d.count(n, looked) for n in names) >= 3, 30, "3 cycles of each")
        jobs = sched._sched.get_jobs()
        assert len(jobs) < len(names), [j.id for j in jobs]  # a job per slot, not per target
        with d._rec:
            runs = [r for r in d.runs if r[2] >= looked]
        for name in names:
            first, interval = sched.anchor[name]
            due = [at for n, at, _ in runs if n == name]
            assert len(set(due)) == len(due), (name, due)  # one cycle per instant
            for at in due:  # on its own phase: its anchor + k intervals
                k = (at - first) / interval
                assert abs(k - round(k)) < 1e-6, (name, at, first)
        with sqlite3.connect(tmp_path / "state.db") as db:  # lateness said per cycle
            said = dict(db.execute("SELECT target, lateness FROM cycles").fetchall())
        assert set(said) == set(names) and all(v is not None and v >= 0 for v in said.values())

        # reload: the targets of one slot go, t8 comes
        key, group = next((k, g) for k, g in sched._groups.items() if len(g.members) >= 2)
        gone = set(group.members)
        write(cfg, [*(n for n in names if n not in gone), "t8"], url)
        settles = d.memory.settles
        sched, runner = d.reload(sched, runner)
        reloaded = time.time()
        assert not gone & set(sched.anchor)
        assert key not in sched._groups  # emptied: its job removed
        assert group.job_id not in {j.id for j in sched._sched.get_jobs()}
        wait(lambda: d.memory.settles > settles, 10, "the heap settled at the reload")
        wait(lambda: d.count("t8", reloaded) >= 3, 30, "t8's first look and cycles")
        time.sleep(0.5)
        assert all(d.count(n, reloaded + 0.5) == 0 for n in gone)  # a cycle then was running
        assert len(sched._sched.get_jobs()) == len(sched._groups)
    finally:
        sched.shutdown(wait=False)
        runner.stop(4.0)
        d.memory.stop()
        if d.pool is not None:
            d.pool.discard()
        state.close()
