"""systemd's notify protocol without a dependency: datagrams to $NOTIFY_SOCKET (READY, STATUS,
WATCHDOG, RELOADING, STOPPING). The watchdog is pinged by the daemon's main loop, and only
while cycles progress: a stuck main loop or a scheduler that stopped firing stops the pings,
and systemd (WatchdogSec=, Restart=on-watchdog) restarts the daemon.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Mapping

from .metrics import DaemonCollector

log = logging.getLogger(__name__)
STATUS_EVERY = 30.0  # without a watchdog, STATUS= is refreshed this often
FREEZE_ENV = "DBWATCH_TEST_FREEZE_AFTER"  # tests: the main loop blocks after N cycles


def _address(raw: str) -> str | bytes:
    """`@name` is the abstract namespace (a leading NUL byte on the wire)."""
    return b"\0" + raw[1:].encode() if raw.startswith("@") else raw


class Notifier:
    """Sends notify messages; does nothing when $NOTIFY_SOCKET is unset (not under systemd)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        raw = env.get("NOTIFY_SOCKET", "")
        self.address = _address(raw) if raw.startswith(("/", "@")) else None
        self.watchdog_every = _watchdog_every(env)
        self._sock: socket.socket | None = None
        self._failed = False

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, *fields: str) -> bool:
        if self.address is None:
            return False
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self._sock.setblocking(False)  # a full socket never blocks the main loop
            self._sock.sendto("\n".join(fields).encode(), self.address)
        except OSError as exc:
            if not self._failed:  # said once: a systemd that went away is not news every tick
                log.warning("cannot notify systemd through $NOTIFY_SOCKET: %s", exc)
            self._failed = True
            return False
        self._failed = False
        return True

    def ready(self, status: str) -> bool:
        return self.send("READY=1", f"STATUS={status}", f"MAINPID={os.getpid()}")

    def reloading(self) -> bool:
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        return self.send("RELOADING=1", f"MONOTONIC_USEC={usec}", "STATUS=reloading the config")

    def stopping(self) -> bool:
        return self.send("STOPPING=1", "STATUS=stopping: letting running cycles finish")

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _watchdog_every(env: Mapping[str, str]) -> float | None:
    """Half of WATCHDOG_USEC, when the watchdog is meant for this process (WATCHDOG_PID)."""
    try:
        usec = int(env.get("WATCHDOG_USEC", "0"))
    except ValueError:
        return None
    pid = env.get("WATCHDOG_PID")
    if usec <= 0 or (pid and pid.strip() != str(os.getpid())):
        return None
    return usec / 2e6


class Watchdog:
    """The main loop's side of the watchdog: cycles beat (any thread); the main loop pings
    systemd only if a cycle ended or was reported missed within `window` seconds."""

    def __init__(self, notifier: Notifier, window: float, env: Mapping[str, str] | None = None):
        self.notifier = notifier
        self.window = window
        self._lock = threading.Lock()
        self._last = time.monotonic()  # the start counts: the first cycle is yet to end
        self._beats = 0
        self._withheld = False
        env = os.environ if env is None else env
        raw = env.get(FREEZE_ENV, "")
        self._freeze_after = int(raw) if raw.isdigit() else None

    def beat(self) -> None:
        with self._lock:
            self._last = time.monotonic()
            self._beats += 1

    @property
    def beats(self) -> int:
        with self._lock:
            return self._beats

    def timeout(self) -> float | None:
        """How long the main loop may block between ticks (None: only signals wake it)."""
        if not self.notifier.enabled:
            return None
        every = self.notifier.watchdog_every
        return min(every, STATUS_EVERY) if every is not None else STATUS_EVERY

    def progressing(self, now: float | None = None) -> bool:
        with self._lock:
            return (time.monotonic() if now is None else now) - self._last <= self.window

    def tick(self, status: str) -> bool:
        """Called by the main loop when it wakes: STATUS=, and WATCHDOG=1 while cycles progress.
        True if a ping was sent."""
        if not self.notifier.enabled:
            return False
        self._test_freeze()
        if self.notifier.watchdog_every is None:
            self.notifier.send(f"STATUS={status}")
            return False
        if not self.progressing():
            if not self._withheld:
                log.error(
                    "no cycle ended for %.0fs: withholding the systemd watchdog ping", self.window
                )
            self._withheld = True
            self.notifier.send(f"STATUS=stalled: no cycle ended for {self.window:.0f}s")
            return False
        self._withheld = False
        return self.notifier.send("WATCHDOG=1", f"STATUS={status}")

    def _test_freeze(self) -> None:
        """DBWATCH_TEST_FREEZE_AFTER=N: a hung main loop, for the watchdog's own test."""
        if self._freeze_after is not None and self.beats >= self._freeze_after:
            log.warning("%s: the main loop blocks now (test hook)", FREEZE_ENV)
            threading.Event().wait()


def window_for(intervals: list[float], cycle_timeout: float, ping_every: float | None) -> float:
    """How long without any cycle ending means the daemon is stuck: the slowest target's
    interval plus a cycle's deadline (a hung target is reported missed by then), plus slack."""
    return max(intervals, default=60.0) + cycle_timeout + 2 * (ping_every or 0.0) + 5.0


def status_text(collector: DaemonCollector) -> str:
    """STATUS=: the targets and what they find now (the collector's latest cycle of each)."""
    with collector.lock:
        stats = list(collector.targets.values())
    up = sum(1 for st in stats if st.up)
    counts: dict[str, int] = {}
    for st in stats:
        for (_, severity), n in st.findings.items():
            counts[severity] = counts.get(severity, 0) + n
    found = ", ".join(f"{n} {sev}" for sev, n in sorted(counts.items())) or "no findings"
    seen = f"{len(stats)} target{'' if len(stats) == 1 else 's'}"
    waiting = collector.awaiting()
    first = f"; {waiting} not looked at yet" if waiting else ""
    return f"{seen} seen ({up} up){first}: {found}"
