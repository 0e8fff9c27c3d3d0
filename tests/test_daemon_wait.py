"""The daemon's main thread blocks on its signal event (no polling loop, no state reads while
idle) and wakes only when a signal, or a stop request, arrives."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from dbwatch.daemon import signals as signals_mod
from dbwatch.daemon.loop import Daemon, load_setup
from dbwatch.daemon.signals import Signals
from dbwatch.daemon.state import State


def test_signals_wait_blocks_until_a_stop_request() -> None:
    s = Signals()
    threading.Timer(0.3, s.request_stop).start()
    began = time.monotonic()
    assert s.wait() is True
    assert time.monotonic() - began >= 0.25 and s.stop_requested
    assert not s.take_reload()


def test_a_reload_is_taken_once_and_never_after_a_stop() -> None:
    s = Signals()
    s._hup(1, None)
    assert s.wait(0) and s.take_reload() and not s.take_reload()
    s._hup(1, None)
    s.request_stop()
    assert not s.take_reload()


def test_main_thread_waits_without_timeout_and_reads_no_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "dbwatch.toml"
    # a target that is never due during the test: the cycles are not what is measured
    cfg.write_text('[[targets]]\nname = "t"\nurl = "postgresql://u@127.0.0.1:1/db"\ninterval = "1h"\n')
    monkeypatch.setattr(signals_mod.signal, "signal", lambda *a: None)  # pytest keeps its own
    state = State(tmp_path / "state.db")
    d = Daemon(cfg, state, load_setup(cfg))
    waits: list[float | None] = []
    real_wait = Signals.wait

    def wait(self: Signals, timeout: float | None = None) -> bool:
        waits.append(timeout)
        return real_wait(self, timeout)

    monkeypatch.setattr(Signals, "wait", wait)
    reads: list[str] = []
    real_rows = State._rows

    def rows(self: State, sql: str, params: object = ()) -> object:
        if threading.current_thread() is threading.main_thread():
            reads.append(sql)
        return real_rows(self, sql, params)  # type: ignore[arg-type]

    monkeypatch.setattr(State, "_rows", rows)
    threading.Timer(1.5, d.signals.request_stop).start()
    began = time.monotonic()
    try:
        assert d.run_forever() == 0
    finally:
        state.close()
    assert time.monotonic() - began < 1.5 + 5.0
    assert waits == [None]  # one blocking wait, no timeout: nothing polls
    after_start = [q for q in reads if "count(*)" in q.lower()]
    assert after_start == [], reads
