"""A target that answered and then froze mid-session, due in the same slot of the grid as 8
healthy ones and first in its order, does not hold up the others (dbwatch.daemon.runner: the
pool, deadlines), and every due cycle of theirs still runs.

The real daemon, scheduler and runner, against the local PostgreSQL: 8 healthy targets and
one behind a proxy that stops forwarding on demand (a server that stopped after answering:
its kept session is in the pool, its next cycle hangs in a read until the deadline). Written
for the burst experiment (docs/cycle-cost.md "Bursts"), which would have serialised a slot's
cycles: any such change must keep this bound.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import PG_URL
from hangserver import FreezeProxy

from dbwatch.daemon import scheduler as sched_mod
from dbwatch.daemon.health import SUBJECT
from dbwatch.daemon.loop import Daemon, load_setup
from dbwatch.daemon.runner import Runner, Slot
from dbwatch.daemon.state import State
from dbwatch.pipeline import TargetResult


class Recording(Daemon):
    """The real daemon; remembers each cycle: target, due, started, ended, thread."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.runs: list[tuple[str, float, float, float, int]] = []
        self._rec = threading.Lock()

    def cycle(self, name: str, scheduled: float, slot: Slot | None = None) -> TargetResult | None:
        t0 = time.time()
        try:
            return super().cycle(name, scheduled, slot)
        finally:
            with self._rec:
                self.runs.append((name, scheduled, t0, time.time(), threading.get_ident()))


@pytest.fixture
def db(own_pg_db: str) -> str:
    """A database made for this test (conftest: dropped after)."""
    return own_pg_db


def test_a_target_frozen_in_its_slot_does_not_hold_up_the_others(
    tmp_path: Path, db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a grid as long as the interval: every target due on the same slot
    monkeypatch.setattr(sched_mod, "GRID", 3.0)
    base = PG_URL.rsplit("/", 1)[0]
    proxy = FreezeProxy(("127.0.0.1", 5432), at_first_query=False)
    targets = {f"ok-{i}": f"{base}/{db}" for i in range(8)} | {"dead": proxy.url(db)}
    cfg = tmp_path / "dbwatch.toml"
    lines = ['[daemon]\ncycle_timeout = "3s"\nmissed_cycles = 1\n']
    for name, url in targets.items():
        lines.append(f'[[targets]]\nname = "{name}"\nurl = "{url}"\ninterval = "3s"\n')
    cfg.write_text("\n".join(lines))
    setup = load_setup(cfg)
    state = State(tmp_path / "state.db")
    d = Recording(cfg, state, setup)
    runner = Runner(d._slot_job, 8, setup.config.daemon.cycle_timeout, d._missed)
    sched = d._new_scheduler(runner)
    try:
        # warm: every target's first look and its first scheduled cycle ("dead" answered too:
        # a pooled target, first in its slot's order)
        end = time.time() + 30
        while time.time() < end:
            with d._rec:
                count = {n: sum(1 for r in d.runs if r[0] == n) for n in targets}
            if min(count.values()) >= 2:
                break
            time.sleep(0.1)
        assert min(count.values()) >= 2, count
        assert "dead" in runner._answering, "the proxied target never answered"
        with d._rec:
            first_slot = [r for r in d.runs if r[1] == min(a for a, _ in sched.anchor.values())]
        assert len(first_slot) == 9, first_slot  # one slot: all 9 due at the same time
        proxy.stop_forwarding()
        frozen_at = time.time()
        time.sleep(9.5)  # three intervals
    finally:
        sched.shutdown(wait=False)
        left = runner.stop(4.0)
        proxy.close()
    with d._rec:
        after = [r for r in d.runs if r[1] >= frozen_at]
    assert [r for r in after if r[0] == "dead"], "the frozen target's cycle never started"
    healthy = [r for r in after if r[0] != "dead"]
    per = {n: sum(1 for r in healthy if r[0] == n) for n in targets if n != "dead"}
    assert min(per.values()) >= 3, per  # every healthy cycle due ran
    # the frozen one first in its slot holds one worker until its 3 s deadline; the others of
    # the slot start beside it (this machine's noise aside), not after its deadline
    late = sorted(started - due for _, due, started, _, _ in healthy)
    assert late[-1] < 1.0, late[-5:]
    firing = {(r.target, r.subject) for r in state.firing() if r.rule == "DW001"}
    assert ("dead", SUBJECT) in firing  # abandoned at its deadline, and said
    assert not [t for t, _ in firing if t.startswith("ok-")]
    assert not [n for n in left if n.startswith("ok-")]
    state.close()
