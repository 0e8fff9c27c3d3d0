"""Helpers shared by the scenarios and benchmarks: a loopback webhook receiver that records
what dbwatch sends, machine/version facts for result files, and small statistics.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class WebhookReceiver:
    """A tiny HTTP server on 127.0.0.1 recording every alert (Alertmanager webhook v4 body)."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(min(length, 4 << 20))
                self.send_response(200)
                self.end_headers()
                receiver._record(body)

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, name="webhook",
                                        daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _record(self, body: bytes) -> None:
        t = round(time.monotonic() - self.t0, 2)
        try:
            doc = json.loads(body)
        except ValueError:
            return
        for alert in doc.get("alerts") or []:
            labels = alert.get("labels") or {}
            ann = alert.get("annotations") or {}
            try:
                evidence = json.loads(ann.get("evidence") or "{}")
            except ValueError:
                evidence = {}
            event = {"t": t, "status": alert.get("status"), "rule": labels.get("alertname"),
                     "severity": labels.get("severity"), "subject": labels.get("subject"),
                     "action": labels.get("action") or None,
                     "pid": evidence.get("pid") if isinstance(evidence, dict) else None,
                     "summary": (ann.get("summary") or "")[:300]}
            with self._lock:
                self.events.append(event)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_mb() -> int | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return None


def os_name() -> str:
    try:
        with open("/etc/os-release", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.platform()


def machine_info() -> dict[str, Any]:
    return {"cpu_model": cpu_model(), "cpu_count": os.cpu_count(), "memory_mb": memory_mb(),
            "os": os_name(), "kernel": platform.release(),
            "python": sys.version.split()[0],
            # the machine may be shared: figures taken under load say so
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100.0 * len(ordered) + 0.5) - 1))
    return ordered[k]


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def rounded(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)
