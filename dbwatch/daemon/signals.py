"""What wakes the daemon's main thread: SIGTERM/SIGINT (stop) and SIGHUP (reload).

The main thread blocks on one Event that only a signal (or `request_stop`) sets — no
polling. The flags live on the instance: no module-level mutable state.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType


class Signals:
    def __init__(self) -> None:
        self.stop_requested = False
        self.reload_requested = False
        self._event = threading.Event()

    def install(self) -> None:
        """Handle SIGTERM/SIGINT and SIGHUP (the main thread only)."""
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        signal.signal(signal.SIGHUP, self._hup)

    def _stop(self, signum: int, _frame: FrameType | None) -> None:
        self.request_stop()

    def _hup(self, signum: int, _frame: FrameType | None) -> None:
        self.reload_requested = True
        self._event.set()

    def request_stop(self) -> None:
        self.stop_requested = True
        self._event.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a signal arrives (or `timeout`); True if one did."""
        got = self._event.wait(timeout)
        self._event.clear()
        return got

    def take_reload(self) -> bool:
        """True once per SIGHUP, and never once a stop is requested."""
        if self.reload_requested and not self.stop_requested:
            self.reload_requested = False
            return True
        return False
