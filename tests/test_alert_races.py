"""Alerts exactly as promised (issue 18.6), with a recording receiver on loopback that can
hold its answer: an escalation while the warning is in flight is delivered, a reload during
a send does not send twice, a removed receiver's queue is reported and dropped, and every
copy of one message carries the same idempotency key (fingerprint + revision)."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from dbwatch.alerts.delivery import Delivery, Worker
from dbwatch.alerts.router import Policy, route
from dbwatch.commands.status import as_table, collect
from dbwatch.config import AlertConfig, Config
from dbwatch.daemon.state import State
from dbwatch.findings import Finding
from dbwatch.statereader import StateReader


class Recorder:
    """Records every request; `delay` holds each answer; `codes` are answered in turn."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.codes: list[int] = []
        self.requests: list[tuple[dict[str, str], dict[str, Any], int]] = []
        self.arrived = threading.Event()
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                code = outer.codes.pop(0) if outer.codes else 200
                outer.requests.append((dict(self.headers), body, code))
                outer.arrived.set()
                time.sleep(outer.delay)
                self.send_response(code)
                self.end_headers()

            def log_message(self, *a: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def accepted(self) -> list[dict[str, Any]]:
        return [b for _, b, code in self.requests if code == 200]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    r = Recorder()
    yield r
    r.close()


def finding(severity: str) -> Finding:
    return Finding(
        rule="PG001",
        severity=severity,
        target="db",
        subject="pid 7",
        summary=f"pid 7 transaction open ({severity})",
        fix="SELECT pg_terminate_backend(7);",
        identity=["pid 7", "2026-01-01"],
    )


def policy(name: str = "hook") -> Policy:
    return Policy(name, "webhook", "warning", 3600.0, True)


def wait(cond: Any, timeout: float = 10.0) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError("timed out")


def severities(bodies: list[dict[str, Any]]) -> list[str]:
    return [b["alerts"][0]["labels"]["severity"] for b in bodies]


def test_escalation_while_the_warning_is_in_flight_is_delivered(tmp_path: Path) -> None:
    rec = Recorder(delay=1.0)
    st = State(tmp_path / "s.db")
    cfg = AlertConfig(kind="webhook", url=rec.url, name="hook", timeout=5.0)
    try:
        st.update("db", [finding("warning")], now=time.time())
        route(st, "db", [policy()], time.time())
        w = Worker(cfg, st, 0.05, 0.1)
        w.start()
        assert rec.arrived.wait(5)  # the warning is in flight, its 2xx held for 1 s
        st.update("db", [finding("critical")], now=time.time())
        assert route(st, "db", [policy()], time.time()) == 1  # the escalation, queued now
        w.wake_event.set()
        wait(lambda: len(rec.accepted()) >= 2 and not st.outbox_size())
        w.stop_event.set()
        w.join(5)
    finally:
        rec.close()
    got = rec.accepted()
    assert severities(got) == ["warning", "critical"]
    keys = [b["idempotencyKey"] for b in got]
    assert keys[0] != keys[1] and all(k.startswith(finding("warning").fingerprint) for k in keys)
    assert st.outbox_size() == {}
    st.close()


def test_reload_during_a_send_delivers_once(tmp_path: Path) -> None:
    rec = Recorder(delay=1.5)
    st = State(tmp_path / "s.db")
    cfg = AlertConfig(kind="webhook", url=rec.url, name="hook", timeout=5.0)
    delivery = Delivery(st, 0.05, 0.1)
    try:
        st.update("db", [finding("warning")], now=time.time())
        route(st, "db", [policy()], time.time())
        delivery.start([cfg])
        assert rec.arrived.wait(5)
        # SIGHUP with a changed receiver config while the send waits for its answer
        delivery.start([replace(cfg, timeout=6.0)])
        wait(lambda: not st.outbox_size())
        time.sleep(2.0)  # a second copy would arrive within this
        delivery.stop(2.0)
    finally:
        rec.close()
    assert len(rec.requests) == 1, [h.get("Idempotency-Key") for h, _, _ in rec.requests]
    st.close()


def test_removed_receiver_is_reported_and_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    st = State(tmp_path / "s.db")
    st.update("db", [finding("warning")], now=time.time())
    route(st, "db", [policy("old-hook"), policy("hook")], time.time())
    assert st.outbox_size() == {"old-hook": 1, "hook": 1}
    delivery = Delivery(st)
    kept = AlertConfig(kind="webhook", url="http://127.0.0.1:9/x", name="hook")
    with caplog.at_level(logging.WARNING):
        gone = delivery.report_orphans([kept])
    assert gone == {"old-hook": 1}
    assert st.outbox_size() == {"hook": 1}
    assert "old-hook" in caplog.text and "no longer in the config" in caplog.text
    assert st.sent("db", "old-hook") == {}  # re-adding it later sends afresh
    doc = collect(StateReader(tmp_path / "s.db"), Config(), time.time())
    assert doc["alerts_dropped"][0]["receiver"] == "old-hook"
    assert doc["alerts_dropped"][0]["messages"] == 1
    assert "receiver 'old-hook' were dropped" in as_table(doc, 100, False)
    assert delivery.report_orphans([kept]) == {}  # said once
    st.close()


def test_every_copy_carries_the_same_idempotency_key(tmp_path: Path, recorder: Recorder) -> None:
    st = State(tmp_path / "s.db")
    recorder.codes = [500, 503]  # two failed attempts, then accepted: three copies
    cfg = AlertConfig(kind="webhook", url=recorder.url, name="hook", timeout=5.0)
    st.update("db", [finding("warning")], now=time.time())
    route(st, "db", [policy()], time.time())
    w = Worker(cfg, st, 0.01, 0.02)
    for _ in range(3):
        w.pass_once()
    assert [code for _, _, code in recorder.requests] == [500, 503, 200]
    headers = [h["Idempotency-Key"] for h, _, _ in recorder.requests]
    bodies = [b for _, b, _ in recorder.requests]
    assert len(set(headers)) == 1
    fp = finding("warning").fingerprint
    assert headers[0].startswith(f"{fp}-")
    for b in bodies:
        assert b["idempotencyKey"] == headers[0]
        assert b["alerts"][0]["annotations"]["idempotency_key"] == headers[0]
        assert b["alerts"][0]["fingerprint"] == fp
    # a new content (resolved) is a new revision: a new key
    st.update("db", [], now=time.time())
    route(st, "db", [policy()], time.time())
    w.pass_once()
    assert recorder.requests[-1][0]["Idempotency-Key"] != headers[0]
    assert recorder.requests[-1][1]["status"] == "resolved"
    st.close()


def test_coalescing_a_queued_message_gives_it_a_new_revision(tmp_path: Path) -> None:
    st = State(tmp_path / "s.db")
    first = st.enqueue("hook", "fp1", "firing", {"x": 1}, 1.0)
    rev1 = st.outbox_head("hook")[0]["rev"]
    assert st.enqueue("hook", "fp1", "firing", {"x": 2}, 2.0) == first  # replaced in place
    head = st.outbox_head("hook")
    assert len(head) == 1 and head[0]["payload"] == {"x": 2} and head[0]["rev"] > rev1
    assert not st.outbox_done(first, rev1)  # the old content's 2xx does not remove the new
    assert st.outbox_done(first, head[0]["rev"])
    st.close()
