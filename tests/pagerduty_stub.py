"""A local stand-in for PagerDuty's Events API v2 (POST /v2/enqueue) that enforces the documented
limits and answers like the service: 202 accepted; 400 for an invalid event; 413 past 512 KB;
429/500 on demand (throttled / down)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_BYTES = 512 * 1024
ACTIONS = ("trigger", "acknowledge", "resolve")
SEVERITIES = ("critical", "error", "warning", "info")


def problems(event: Any) -> list[str]:
    """What the API would refuse in this event (empty: valid)."""
    if not isinstance(event, dict):
        return ["event must be a JSON object"]
    out = []
    key = event.get("routing_key")
    if not isinstance(key, str) or len(key) != 32:
        out.append("routing_key must be a 32-character string")
    action = event.get("event_action")
    if action not in ACTIONS:
        out.append(f"event_action must be one of {ACTIONS}")
    dedup = event.get("dedup_key")
    if dedup is not None and (not isinstance(dedup, str) or not dedup or len(dedup) > 255):
        out.append("dedup_key must be a non-empty string of at most 255 characters")
    if action in ("acknowledge", "resolve") and dedup is None:
        out.append(f"{action} needs the dedup_key of the trigger")
    if action == "trigger":
        payload = event.get("payload")
        if not isinstance(payload, dict):
            return [*out, "trigger needs a payload"]
        summary = payload.get("summary")
        if not isinstance(summary, str) or not summary or len(summary) > 1024:
            out.append("payload.summary must be 1..1024 characters")
        if not isinstance(payload.get("source"), str) or not payload["source"]:
            out.append("payload.source is required")
        if payload.get("severity") not in SEVERITIES:
            out.append(f"payload.severity must be one of {SEVERITIES}")
        details = payload.get("custom_details")
        if details is not None and not isinstance(details, dict):
            out.append("payload.custom_details must be an object")
    return out


class Stub:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []  # accepted
        self.requests = 0
        self.refused: list[list[str]] = []
        self.fail_next: list[int] = []  # status codes to answer the next requests with
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(n)
                with outer.lock:
                    outer.requests += 1
                    forced = outer.fail_next.pop(0) if outer.fail_next else None
                if self.path != "/v2/enqueue":
                    return self._answer(404, {"status": "not found"})
                if forced is not None:
                    return self._answer(forced, {"status": "forced", "message": str(forced)})
                if n > MAX_BYTES:
                    return self._answer(413, {"status": "invalid event", "message": "too large"})
                if self.headers.get("Content-Type") != "application/json":
                    return self._answer(400, {"status": "invalid event", "errors": ["content type"]})
                try:
                    event = json.loads(raw)
                except ValueError:
                    return self._answer(400, {"status": "invalid event", "errors": ["not JSON"]})
                bad = problems(event)
                if bad:
                    with outer.lock:
                        outer.refused.append(bad)
                    return self._answer(400, {"status": "invalid event", "errors": bad})
                with outer.lock:
                    outer.events.append(event)
                self._answer(
                    202,
                    {"status": "success", "message": "Event processed", "dedup_key": event.get("dedup_key")},
                )

            def _answer(self, code: int, doc: dict[str, Any]) -> None:
                body = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v2/enqueue"

    def of(self, action: str) -> list[dict[str, Any]]:
        with self.lock:
            return [e for e in self.events if e["event_action"] == action]


@contextmanager
def pagerduty_stub() -> Iterator[Stub]:
    stub = Stub()
    t = threading.Thread(target=stub.server.serve_forever, daemon=True)
    t.start()
    try:
        yield stub
    finally:
        stub.server.shutdown()
        stub.server.server_close()
