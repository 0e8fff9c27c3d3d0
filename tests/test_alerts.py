"""Alert payloads (pure), routing rules over a real state DB, and delivery to a loopback receiver."""
from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from schemas import load_json

from dbwatch.alerts.delivery import Delivery, Worker, endpoint, send, where
from dbwatch.alerts.payloads import ZERO_TIME, alert_data, build
from dbwatch.records import AlertMessage
from dbwatch.alerts.router import Policy, muted, route
from dbwatch.config import AlertConfig
from dbwatch.daemon.state import State
from dbwatch.findings import Finding


class Receiver:
    """A real HTTP receiver on loopback; `codes` are answered in turn (then 200)."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.codes: list[int] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                code = outer.codes.pop(0) if outer.codes else 200
                if code == 200:
                    outer.got.append((dict(self.headers), body))
                self.send_response(code)
                self.end_headers()

            def log_message(self, *a: Any) -> None:
                pass
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def bodies(self) -> list[Any]:
        return [json.loads(b) for _, b in self.got]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def finding(subject: str = "pid 7", severity: str = "warning", rule: str = "PG002") -> Finding:
    return Finding(rule=rule, severity=severity, target="db", subject=subject,
                   summary=f"{subject} idle in transaction for 2m", fix="SELECT pg_terminate_backend(7);",
                   evidence={"pid": 7}, identity=[subject])


def row_for(st: State, f: Finding) -> Any:
    st.update("db", [f], now=1000.0)
    row = st.finding(f.fingerprint)
    assert row is not None
    return row


# -- payloads -------------------------------------------------------------------------------

def test_webhook_shape_and_signature(tmp_path: Path) -> None:
    st = State(tmp_path / "s.db")
    data = alert_data(row_for(st, finding()), "firing", 1000.0, 240.0)
    body, headers = build("webhook", "ops", data, 1000.0, secret="k3y")
    doc = load_json(body, "webhook")
    assert doc["version"] == "4" and doc["status"] == "firing" and doc["receiver"] == "ops"
    assert doc["groupKey"]
    (a,) = doc["alerts"]
    assert a["labels"]["alertname"] == "PG002" and a["labels"]["severity"] == "warning"
    assert a["labels"]["target"] == "db" and a["labels"]["subject"] == "pid 7"
    assert a["annotations"]["summary"] == "pid 7 idle in transaction for 2m"
    assert a["annotations"]["fix"] == "SELECT pg_terminate_backend(7);"
    assert a["startsAt"] == "1970-01-01T00:16:40.000Z" and a["endsAt"] == ZERO_TIME
    assert a["fingerprint"] == finding().fingerprint and a["generatorURL"]
    expect = hmac.new(b"k3y", body, hashlib.sha256).hexdigest()
    assert headers["X-Dbwatch-Signature"] == f"sha256={expect}"
    assert "X-Dbwatch-Signature" not in build("webhook", "ops", data, 1000.0)[1]


def test_slack_and_alertmanager(tmp_path: Path) -> None:
    st = State(tmp_path / "s.db")
    data = alert_data(row_for(st, finding(severity="critical")), "firing", 1000.0, 240.0)
    text = json.loads(build("slack", "s", data, 1000.0)[0])["text"]
    for part in ("CRITICAL", "PG002", "`db`", "pid 7", "idle in transaction for 2m",
                 "pg_terminate_backend(7)"):
        assert part in text
    (am,) = json.loads(build("alertmanager", "am", data, 1000.0)[0])
    assert am["labels"]["alertname"] == "PG002" and am["endsAt"] == "1970-01-01T00:20:40.000Z"
    st.update("db", [], now=1100.0)
    res = alert_data(st.finding(finding().fingerprint), "resolved", 1100.0, 0.0)  # type: ignore[arg-type]
    (am,) = json.loads(build("alertmanager", "am", res, 1200.0)[0])
    assert am["endsAt"] == "1970-01-01T00:18:20.000Z"
    assert "RESOLVED" in json.loads(build("slack", "s", res, 1100.0)[0])["text"]
    cfg = AlertConfig(kind="alertmanager", url="http://am:9093", name="am")
    assert endpoint(cfg) == "http://am:9093/api/v2/alerts"


def test_where_hides_secrets() -> None:
    cfg = AlertConfig(kind="slack", url="https://u:pw@hooks.slack.com/services/T0/B0/SECRET",
                      name="s")
    assert "SECRET" not in where(cfg) and "pw" not in where(cfg)


# -- routing --------------------------------------------------------------------------------

def pol(name: str = "hook", kind: str = "webhook", **kw: Any) -> Policy:
    return Policy.of(AlertConfig(kind=kind, url="http://x", name=name, **kw))


def events(st: State, recv: str = "hook") -> list[tuple[str, str]]:
    return [(m["event"], m["payload"]["subject"]) for m in st.outbox_head(recv, 100)]


def test_one_alert_then_repeat_then_resolved(tmp_path: Path) -> None:
    st, p = State(tmp_path / "s.db"), pol(repeat_interval=3600)
    for i in range(20):
        st.update("db", [finding()], now=1000.0 + 15 * i)
        route(st, "db", [p], 1000.0 + 15 * i)
    assert events(st) == [("firing", "pid 7")]
    st.outbox_done(st.outbox_head("hook")[0]["id"])
    st.update("db", [finding()], now=4700.0)
    route(st, "db", [p], 4700.0)
    assert events(st) == [("firing", "pid 7")]          # after repeat_interval
    st.update("db", [], now=4715.0)
    route(st, "db", [p], 4715.0)
    route(st, "db", [p], 4730.0)
    assert events(st) == [("firing", "pid 7"), ("resolved", "pid 7")]


def test_send_resolved_false_and_min_severity(tmp_path: Path) -> None:
    st = State(tmp_path / "s.db")
    quiet, crit = pol("quiet", send_resolved=False), pol("crit", min_severity="critical")
    st.update("db", [finding(), finding("pid 9", "critical", "PG001")], now=0.0)
    route(st, "db", [quiet, crit], 0.0)
    assert events(st, "crit") == [("firing", "pid 9")]
    assert sorted(events(st, "quiet")) == [("firing", "pid 7"), ("firing", "pid 9")]
    st.update("db", [], now=10.0)
    route(st, "db", [quiet, crit], 10.0)
    assert len(events(st, "quiet")) == 2
    assert events(st, "crit") == [("firing", "pid 9"), ("resolved", "pid 9")]


def test_critical_mutes_warning_on_same_subject(tmp_path: Path) -> None:
    st, p = State(tmp_path / "s.db"), pol()
    both = [finding("pid 7", "warning", "PG002"), finding("pid 7", "critical", "PG001")]
    assert len(muted(st.update("db", both, now=0.0).fired)) == 1
    route(st, "db", [p], 0.0)
    assert [(m["payload"]["rule"]) for m in st.outbox_head("hook")] == ["PG001"]
    st.update("db", both[:1], now=10.0)                  # the critical one cleared
    route(st, "db", [p], 10.0)
    assert [(m["event"], m["payload"]["rule"]) for m in st.outbox_head("hook")] == [
        ("firing", "PG001"), ("resolved", "PG001"), ("firing", "PG002")]


def test_escalation_resends_and_alertmanager_resends(tmp_path: Path) -> None:
    st, p, am = State(tmp_path / "s.db"), pol(), pol("am", "alertmanager")
    st.update("db", [finding()], now=0.0)
    route(st, "db", [p, am], 0.0)
    for m in st.outbox_head("hook") + st.outbox_head("am"):
        st.outbox_done(m["id"])
    st.update("db", [finding(severity="critical")], now=15.0)
    route(st, "db", [p, am], 15.0)
    assert [m["payload"]["severity"] for m in st.outbox_head("hook")] == ["critical"]
    st.outbox_done(st.outbox_head("am")[0]["id"])
    route(st, "db", [am], 30.0)
    assert st.outbox_head("am") == []
    route(st, "db", [am], 80.0)                           # within Alertmanager's resolve_timeout
    assert len(st.outbox_head("am")) == 1


# -- delivery -------------------------------------------------------------------------------

def test_delivery_retries_in_order(tmp_path: Path, receiver: Receiver) -> None:
    st = State(tmp_path / "s.db")
    cfg = AlertConfig(kind="webhook", url=receiver.url, name="hook", secret="k", timeout=2.0)
    st.update("db", [finding()], now=0.0)
    route(st, "db", [Policy.of(cfg)], 0.0)
    st.update("db", [], now=1.0)
    route(st, "db", [Policy.of(cfg)], 1.0)
    receiver.codes = [500, 503]
    d = Delivery(st, base=0.05, cap=0.2)
    assert d.flush([cfg], budget=5.0) == 0
    assert [b["status"] for b in receiver.bodies()] == ["firing", "resolved"]
    for headers, body in receiver.got:
        expect = "sha256=" + hmac.new(b"k", body, hashlib.sha256).hexdigest()
        assert headers["X-Dbwatch-Signature"] == expect
    assert d.stats["hook"]["failed"] == 2 and d.stats["hook"]["sent"] == 2


def test_worker_thread_delivers_and_drops_rejected(tmp_path: Path, receiver: Receiver) -> None:
    st = State(tmp_path / "s.db")
    cfg = AlertConfig(kind="slack", url=receiver.url, name="s", timeout=2.0)
    receiver.codes = [400]
    st.enqueue("s", "a", "firing",
               alert_data(row_for(st, finding()), "firing", 0.0, 0.0).to_json())
    st.enqueue("s", "b", "firing",
               alert_data(row_for(st, finding("pid 8")), "firing", 0.0, 0.0).to_json())
    w = Worker(cfg, st, base=0.05, cap=0.1)
    w.start()
    deadline = time.time() + 5
    while st.outbox_size() and time.time() < deadline:
        time.sleep(0.05)
    w.stop_event.set()
    w.wake_event.set()
    w.join(2)
    assert st.outbox_size() == {}
    assert ["pid 8" in b["text"] for b in receiver.bodies()] == [True]


def test_send_connection_refused_is_retryable() -> None:
    cfg = AlertConfig(kind="webhook", url="http://127.0.0.1:1/x", name="h", timeout=1.0)
    out = send(cfg, AlertMessage.from_json(
        {"kind": "finding", "status": "firing", "fingerprint": "f", "rule": "PG002",
         "severity": "warning", "target": "db", "subject": "s", "summary": "", "fix": "",
         "starts_at": 0.0, "ends_at": None}))
    assert not out.ok and not out.permanent and "refused" in out.error.lower()


def test_alertmanager_peers_get_an_alert_at_once_not_in_turn() -> None:
    """Every peer of an Alertmanager cluster is sent the alert at the same time. In turn, a
    peer slow to answer delayed the next one by as much: the second peer in the cluster's
    order then notified too (it waits --cluster.peer-timeout for the first one's notification
    log, not longer). The first peer here answers only once the second has the alert, or
    after 10 s: sent in turn, the second gets it only after that."""
    second_got = threading.Event()
    first_answered_after_second = []

    class First(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            first_answered_after_second.append(second_got.wait(10.0))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *a: Any) -> None:
            pass

    class Second(First):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            second_got.set()
            self.send_response(200)
            self.end_headers()

    servers = [ThreadingHTTPServer(("127.0.0.1", 0), h) for h in (First, Second)]
    for s in servers:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        urls = [f"http://127.0.0.1:{s.server_address[1]}" for s in servers]
        cfg = AlertConfig(kind="alertmanager", url=urls[0], urls=tuple(urls), name="am",
                          timeout=15.0)
        assert cfg.peers == tuple(urls)
        out = send(cfg, AlertMessage.from_json(
            {"kind": "finding", "status": "firing", "fingerprint": "f", "rule": "PG501",
             "severity": "warning", "target": "db", "subject": "s", "summary": "", "fix": "",
             "starts_at": 0.0, "ends_at": None}))
        assert out.ok, out
        assert first_answered_after_second == [True], "the second peer waited for the first"
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()
