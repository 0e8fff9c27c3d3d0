"""dbwatch: diagnostics and watchdog for databases used as job queues."""

from __future__ import annotations

__version__ = "0.1.0"
