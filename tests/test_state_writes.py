"""The state writes what it has (issue 25.3): a finding's JSON object and its text are made
together, never parsed back; the object is exactly what reading the text gives (key order
included), so the rows `State.update` returns equal the rows a reader gets."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dbwatch.alerts.payloads import action_data, alert_data
from dbwatch.daemon.state import State
from dbwatch.findings import Finding
from dbwatch.records import (
    ActionRecord,
    AlertMessage,
    OutboxMessage,
    finding_data,
    stored_json,
)

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.datetimes(timezones=st.just(UTC))
    | st.decimals(allow_nan=False, allow_infinity=False)
    | st.frozensets(st.integers(), max_size=3)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    | st.dictionaries(st.integers(), inner, max_size=4),
    max_leaves=20,
)


@given(VALUES)
def test_stored_json_is_what_the_text_reads_back_as(value: Any) -> None:
    text = json.dumps(value, default=str, sort_keys=True)
    assert stored_json(value) == json.loads(text)
    assert json.dumps(stored_json(value)) == text  # the same text, key order included


def _finding(**evidence: Any) -> Finding:
    return Finding(rule="PG002", severity="warning", target="pg", subject="pid 7",
                   summary="idle", fix="end it", evidence=evidence, identity=("pid", 7))


def test_finding_data_object_and_text_agree() -> None:
    f = _finding(at=datetime(2026, 1, 2, tzinfo=UTC), n=Decimal("1.5"), pids=(1, 2),
                 by_pid={12: "a", 3: "b"})
    data, text = finding_data(f)
    assert json.loads(text) == data and json.dumps(data) == text
    assert list(data) == sorted(data) and list(data["evidence"]["by_pid"]) == ["3", "12"]


def test_update_returns_the_rows_a_reader_reads(tmp_path: Path) -> None:
    st_ = State(tmp_path / "s.db")
    try:
        f = _finding(age_seconds=12.5, since=datetime(2026, 1, 2, tzinfo=UTC), pids=(7,))
        first = st_.update("pg", [f], now=100.0)
        again = st_.update("pg", [f], now=160.0)
        assert first.firing[0].data == st_.firing("pg")[0].data == again.firing[0].data
        assert json.dumps(again.firing[0].data) == json.dumps(st_.firing("pg")[0].data)
        assert again.firing[0] == st_.firing("pg")[0]
    finally:
        st_.close()


ACTION = {"action": "terminated", "target": "pg", "engine": "postgresql", "kind": "session",
          "pid": 7, "user": "app", "application": "billing", "reason": "idle in transaction 2h",
          "statement": "SELECT pg_terminate_backend(7)", "origin": {"phrase": "billing"},
          "rule": "PG002", "fingerprint": "ab12", "subject": "pid 7", "severity": "warning",
          "finding": "pid 7 idle", "dry_run": False, "summary": "dbwatch terminated pid 7"}


def test_action_record_is_its_json_and_announces_as_before() -> None:
    rec = ActionRecord.from_json(ACTION)
    assert rec.to_json() == ACTION and json.dumps(rec.to_json()) == json.dumps(ACTION)
    assert (rec.action, rec.target, rec.reason, rec.who) == (
        "terminated", "pg", "idle in transaction 2h", "app@billing")
    msg = action_data(rec, 5.0)
    text = json.dumps(ACTION, default=str, sort_keys=True)  # how the fingerprint was made
    assert msg.fingerprint == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert msg.evidence == json.loads(text) and msg.kind == "action"
    assert (msg.rule, msg.target, msg.action, msg.summary) == (
        "PG002", "pg", "terminated", "dbwatch terminated pid 7")


def test_alert_message_round_trips_through_the_outbox(tmp_path: Path) -> None:
    st_ = State(tmp_path / "s.db")
    try:
        st_.update("pg", [_finding(pids=(7,))], now=100.0)
        (row,) = st_.firing("pg")
        msgs = [alert_data(row, "firing", 100.0, 240.0), alert_data(row, "resolved", 150.0, 0.0),
                action_data(ActionRecord.from_json(ACTION), 120.0)]
        for m in msgs:
            st_.enqueue("hook", m.fingerprint, m.kind, m.to_json(), m.queued_at)
        queued = [OutboxMessage.of(r).payload for r in st_.outbox_head("hook")]
    finally:
        st_.close()
    assert queued[-1] == msgs[-1]
    assert all(AlertMessage.from_json(m.to_json()) == m for m in msgs)
    assert msgs[0].confidence == "high" and "confidence" not in msgs[2].to_json()
