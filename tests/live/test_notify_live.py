"""systemd's notify protocol (issue 26.2), without systemd: a real AF_UNIX datagram socket in
the test is $NOTIFY_SOCKET of a real `dbwatch watch` watching our own database. READY arrives,
WATCHDOG pings arrive while cycles run, stop when the process is frozen (SIGSTOP) or its main
loop hangs (DBWATCH_TEST_FREEZE_AFTER) while its cycle threads still run, STOPPING on SIGTERM."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import ROOT
from oncall_scene import scene

from dbwatch.daemon.notify import Notifier, Watchdog, _watchdog_every, window_for

WATCHDOG_USEC = 600_000  # pings every 0.3 s


class Listener:
    """The systemd side: a datagram socket collecting (monotonic time, message fields)."""

    def __init__(self, address: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(b"\0" + address[1:].encode() if address.startswith("@") else address)
        self.address = address
        self.got: list[tuple[float, dict[str, str]]] = []
        self.seen = 0  # wait_for's cursor into `got`

    def collect(self, seconds: float) -> list[tuple[float, dict[str, str]]]:
        """Everything that arrives within `seconds`."""
        end = time.monotonic() + seconds
        new: list[tuple[float, dict[str, str]]] = []
        while (left := end - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                break
            fields = dict(line.split("=", 1) for line in data.decode().split("\n") if line)
            new.append((time.monotonic(), fields))
        self.got += new
        return new

    def wait_for(self, key: str, timeout: float) -> dict[str, str]:
        """The next message (after the last one wait_for returned) carrying `key`."""
        end = time.monotonic() + timeout
        while True:
            while self.seen < len(self.got):
                fields = self.got[self.seen][1]
                self.seen += 1
                if key in fields:
                    return fields
            if time.monotonic() >= end:
                break
            self.collect(min(0.5, end - time.monotonic()))
        raise AssertionError(f"no {key} within {timeout}s; got {self.got[-5:]}")

    def close(self) -> None:
        self.sock.close()


def pings(msgs: list[tuple[float, dict[str, str]]]) -> list[float]:
    return [t for t, f in msgs if f.get("WATCHDOG") == "1"]


@contextmanager
def daemon(tmp_path: Path, address: str, **env: str) -> Iterator[tuple[subprocess.Popen[bytes], Listener]]:
    listener = Listener(address)
    with scene(jobs=3, my=False) as s:
        cfg = tmp_path / "dbwatch.toml"
        cfg.write_text(f'[[targets]]\nname = "pg"\nurl = "{s.pg_url}"\ninterval = "1s"\n')
        log = (tmp_path / "daemon.log").open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "dbwatch", "watch", "--config", str(cfg),
             "--state", str(tmp_path / "state.db")],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "NOTIFY_SOCKET": address, "WATCHDOG_USEC": str(WATCHDOG_USEC), **env},
        )
        try:
            yield proc, listener
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            log.close()
            listener.close()


def last_cycle(state: Path) -> float:
    """When the target's last cycle started (the state keeps the latest per target)."""
    with sqlite3.connect(state) as db:
        return float(db.execute("SELECT max(started) FROM cycles").fetchone()[0])


def test_ready_watchdog_sigstop_and_stopping(tmp_path: Path) -> None:
    # the abstract namespace: NOTIFY_SOCKET=@name
    with daemon(tmp_path, f"@dbwatch-test-{uuid.uuid4().hex[:8]}") as (proc, listener):
        ready = listener.wait_for("READY", 30)
        assert ready["READY"] == "1" and ready["STATUS"] == "watching 1 target(s)"
        assert ready["MAINPID"] == str(proc.pid)
        alive = listener.collect(2.0)
        assert len(pings(alive)) >= 4, alive  # every 0.3 s
        assert any(f.get("STATUS", "").startswith("1 target seen (1 up)") for _, f in alive), alive

        proc.send_signal(signal.SIGSTOP)  # a frozen process: its pings must stop
        try:
            time.sleep(0.3)
            listener.collect(0.2)  # what was in flight
            frozen = listener.collect(2.0)
            assert pings(frozen) == [], frozen
        finally:
            proc.send_signal(signal.SIGCONT)
        assert pings(listener.collect(2.0)), "pings resume once the process runs again"

        proc.send_signal(signal.SIGHUP)  # reload: RELOADING=1 then READY=1
        reloading = listener.wait_for("RELOADING", 10)
        assert "MONOTONIC_USEC" in reloading
        listener.wait_for("READY", 10)

        proc.send_signal(signal.SIGTERM)
        listener.wait_for("STOPPING", 10)
        assert proc.wait(30) == 0


def test_hung_main_loop_stops_the_pings_while_cycles_still_run(tmp_path: Path) -> None:
    sock = str(tmp_path / "notify.sock")
    with daemon(tmp_path, sock, DBWATCH_TEST_FREEZE_AFTER="3") as (proc, listener):
        listener.wait_for("READY", 30)
        listener.wait_for("WATCHDOG", 10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # the freeze comes after 3 cycles
            if "blocks now" in (tmp_path / "daemon.log").read_text():
                break
            listener.collect(0.2)
        else:
            raise AssertionError("the test hook never froze the main loop")
        listener.collect(0.4)  # a ping already in flight
        before = last_cycle(tmp_path / "state.db")
        silent = listener.collect(2.5)  # ~8 ping intervals
        assert pings(silent) == [], silent
        assert proc.poll() is None  # alive, PID kept: only the watchdog can tell
        # the cycle threads still work: pings come from the main loop, not from a side thread
        assert last_cycle(tmp_path / "state.db") > before


# -- the pure parts --------------------------------------------------------------------------


def test_watchdog_env() -> None:
    assert _watchdog_every({"WATCHDOG_USEC": "2000000"}) == 1.0
    assert _watchdog_every({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())}) == 1.0
    assert _watchdog_every({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"}) is None  # not ours
    assert _watchdog_every({"WATCHDOG_USEC": "x"}) is None
    assert _watchdog_every({}) is None
    assert not Notifier({}).enabled and not Notifier({"NOTIFY_SOCKET": "relative"}).enabled


def test_watchdog_withholds_pings_once_cycles_stop(tmp_path: Path) -> None:
    listener = Listener(str(tmp_path / "n.sock"))
    try:
        env = {"NOTIFY_SOCKET": listener.address, "WATCHDOG_USEC": "1000000"}
        wd = Watchdog(Notifier(env), window=0.5, env={})
        assert wd.timeout() == 0.5
        assert wd.tick("ok")  # started just now: within the window
        time.sleep(0.6)
        assert not wd.tick("ok")  # no cycle ended for longer than the window
        wd.beat()
        assert wd.tick("ok")
        got = listener.collect(0.3)
        assert [f.get("WATCHDOG") for _, f in got] == ["1", None, "1"]
        assert got[1][1]["STATUS"].startswith("stalled")
    finally:
        listener.close()
    assert window_for([15.0, 60.0], 30.0, 0.5) == 60 + 30 + 1 + 5


def test_shipped_unit_is_type_notify(tmp_path: Path) -> None:
    unit = (ROOT / "contrib" / "systemd" / "dbwatch.service").read_text()
    keys = dict(
        line.split("=", 1) for line in unit.splitlines() if "=" in line and not line.startswith("#")
    )
    assert keys["Type"] == "notify" and keys["NotifyAccess"] == "main"
    assert keys["WatchdogSec"].endswith("s") and int(keys["WatchdogSec"][:-1]) > 0
    assert keys["Restart"] in ("on-failure", "on-watchdog", "always")  # each restarts on watchdog
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze not installed: the unit's syntax is not verified")
    copy = tmp_path / "dbwatch.service"
    copy.write_text(
        unit.replace("/usr/local/bin/dbwatch", f"{sys.executable} -m dbwatch").replace(
            "EnvironmentFile=/", "EnvironmentFile=-/"
        )
    )
    out = subprocess.run([analyze, "verify", str(copy)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and not out.stderr.strip(), out.stderr
