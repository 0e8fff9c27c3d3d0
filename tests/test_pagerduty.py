"""The PagerDuty Events API v2 receiver (issue 26.3): the event shape, the limits, secrets,
config, and delivery (202 / 400 not retried / 429 and 5xx retried, in order) against a local
stub that enforces the documented limits."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pagerduty_stub import pagerduty_stub, problems
from schemas import load_json

from dbwatch.alerts.delivery import Delivery
from dbwatch.alerts.pagerduty import MAX_EVENT_BYTES, MAX_SUMMARY
from dbwatch.alerts.payloads import alert_data, build
from dbwatch.records import ActionRecord
from dbwatch.alerts.router import Policy, announce, route
from dbwatch.config import PAGERDUTY_URL, AlertConfig, load_config
from dbwatch.daemon.state import State
from dbwatch.errors import ConfigError
from dbwatch.findings import Finding
from dbwatch.targets.secrets import register_secret

KEY = "R0ut1ngKeyR0ut1ngKeyR0ut1ngKey32"
assert len(KEY) == 32


@pytest.fixture
def own_secrets() -> Iterator[None]:
    """Secrets registered by a test are forgotten after it (the scrubber is process-wide)."""
    from dbwatch.targets import secrets

    saved = dict(secrets._patterns), dict(secrets._public)
    yield
    for live, old in zip((secrets._patterns, secrets._public), saved, strict=True):
        live.clear()
        live.update(old)  # type: ignore[attr-defined]
    secrets._generation[0] += 1  # what scrub() masks changed back


def finding(subject: str = "pid 7", severity: str = "critical", evidence: object = None) -> Finding:
    return Finding(rule="PG201", severity=severity, target="db-main", subject=subject,
                   summary=f"{subject} holds the xmin horizon", fix="SELECT pg_terminate_backend(7);",
                   evidence={"pid": 7} if evidence is None else evidence, identity=[subject])


def data(tmp_path: Path, f: Finding, status: str = "firing") -> dict[str, object]:
    st = State(tmp_path / "s.db")
    st.update("db-main", [f], now=1000.0)
    row = st.finding(f.fingerprint)
    assert row is not None
    return alert_data(row, status, 1000.0, 240.0)


def test_trigger_and_resolve_shape(tmp_path: Path) -> None:
    f = finding()
    body, headers = build("pagerduty", "pd", data(tmp_path, f), 1000.0, routing_key=KEY)
    ev = load_json(body, "pagerduty")
    assert problems(ev) == [] and headers["Content-Type"] == "application/json"
    assert ev["routing_key"] == KEY and ev["event_action"] == "trigger"
    assert ev["dedup_key"] == f.fingerprint
    p = ev["payload"]
    assert p["severity"] == "critical" and p["source"] == "db-main"
    assert p["component"] == p["group"] == p["class"] == "PG201"
    assert p["summary"] == "[PG201] db-main: pid 7 holds the xmin horizon"
    assert p["timestamp"].endswith("Z")
    assert p["custom_details"]["evidence"] == {"pid": 7}
    assert p["custom_details"]["fix"] == "SELECT pg_terminate_backend(7);"
    resolve = load_json(
        build("pagerduty", "pd", data(tmp_path, f, "resolved"), 1.0, routing_key=KEY)[0], "pagerduty"
    )
    assert resolve == {"routing_key": KEY, "event_action": "resolve", "dedup_key": f.fingerprint}
    warn = json.loads(build("pagerduty", "pd", data(tmp_path, finding(severity="warning")), 1.0,
                            routing_key=KEY)[0])
    assert warn["payload"]["severity"] == "warning"


def test_limits_and_secrets(tmp_path: Path, own_secrets: None) -> None:
    register_secret("s3cr3t-in-a-query-text")
    huge = {"query": "ALTER USER x PASSWORD 's3cr3t-in-a-query-text'", "rows": ["x" * 1000] * 2000}
    f = Finding(rule="PG201", severity="critical", target="db-main", subject="pid 7",
                summary="y" * 5000, fix="", evidence=huge, identity=["pid 7"])
    body, _ = build("pagerduty", "pd", data(tmp_path, f), 1.0, routing_key=KEY)
    ev = load_json(body, "pagerduty")
    assert problems(ev) == []
    assert len(body) < MAX_EVENT_BYTES
    assert len(ev["payload"]["summary"]) == MAX_SUMMARY
    assert ev["payload"]["custom_details"]["evidence"]["truncated"] is True
    assert b"s3cr3t-in-a-query-text" not in body
    small = json.loads(build("pagerduty", "pd", data(tmp_path, finding(evidence=huge | {"rows": []})),
                             1.0, routing_key=KEY)[0])
    assert "s3cr3t" not in json.dumps(small) and "ALTER USER" in json.dumps(small)
    # the routing key itself is a secret everywhere else, but stays in its own field
    register_secret(KEY)
    ev = json.loads(build("pagerduty", "pd", data(tmp_path, finding(evidence={"k": KEY})), 1.0,
                          routing_key=KEY)[0])
    assert ev["routing_key"] == KEY and KEY not in json.dumps(ev["payload"])


def test_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_secrets: None) -> None:
    monkeypatch.setenv("PD_ROUTING_KEY", KEY)
    cfg = tmp_path / "c.toml"
    cfg.write_text('[[alerts]]\nkind = "pagerduty"\nrouting_key = "${PD_ROUTING_KEY}"\n')
    (a,) = load_config(cfg).alerts
    assert a.kind == "pagerduty" and a.routing_key == KEY and a.url == PAGERDUTY_URL
    cfg.write_text('[[alerts]]\nkind = "pagerduty"\nrouting_key = "short"\nsecret = "x"\n'
                   '[[alerts]]\nkind = "pagerduty"\n'
                   '[[alerts]]\nkind = "webhook"\nurl = "http://h/x"\nrouting_key = "${PD_ROUTING_KEY}"\n')
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    text = "\n".join(err.value.problems)
    assert "alerts[0].routing_key: must be the 32-character integration key" in text
    assert "alerts[0].secret" in text and "alerts[1].routing_key: required" in text
    assert "alerts[2].routing_key: only for" in text
    assert KEY not in text


def test_delivery_202_429_500_400(tmp_path: Path, own_secrets: None) -> None:
    with pagerduty_stub() as stub:
        st = State(tmp_path / "s.db")
        cfg = AlertConfig(kind="pagerduty", url=stub.url, name="pd", routing_key=KEY, timeout=2.0)
        f = finding()
        st.update("db-main", [f], now=0.0)
        route(st, "db-main", [Policy.of(cfg)], 0.0)
        act = ActionRecord.from_json({"action": "terminated", "rule": "PG201"})
        announce(st, [Policy.of(cfg)], act, 0.5)  # no page
        st.update("db-main", [], now=1.0)
        route(st, "db-main", [Policy.of(cfg)], 1.0)
        stub.fail_next = [429, 500, 503]  # throttled, then down: retried, in order
        d = Delivery(st, base=0.05, cap=0.2)
        assert d.flush([cfg], budget=10.0) == 0
        assert [e["event_action"] for e in stub.events] == ["trigger", "resolve"]
        assert {e["dedup_key"] for e in stub.events} == {f.fingerprint}
        assert stub.requests == 5 and d.stats["pd"]["failed"] == 3
        # 400: the event itself was refused, retrying cannot help: dropped after one attempt
        st.update("db-main", [finding("pid 8")], now=2.0)
        route(st, "db-main", [Policy.of(cfg)], 2.0)
        stub.fail_next = [400]
        assert d.flush([cfg], budget=5.0) == 0
        assert stub.requests == 6 and d.stats["pd"]["dropped"] == 1
