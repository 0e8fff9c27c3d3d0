"""A real daemon paging a local PagerDuty Events API v2 stub (issue 26.3): an idle-in-transaction
session on our own database triggers; the daemon restarts; the session ends; the new daemon
resolves with the same dedup_key. The routing key is in no log line and not in the state DB."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from conftest import PG_URL, ROOT
from oncall_scene import scene
from pagerduty_stub import pagerduty_stub
from schemas import validate

KEY = "PdL1veR0utingKeyPdL1veR0utingK32"
assert len(KEY) == 32


def wait_for(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    end = time.time() + timeout
    while time.time() < end:
        got = cond()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def start(cfg: Path, state: Path, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "dbwatch", "watch", "--config", str(cfg), "--state", str(state)],
        cwd=ROOT,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "PD_ROUTING_KEY": KEY, "DBWATCH_ALERT_BACKOFF": "0.2,1"},
    )


def test_trigger_restart_resolve_one_dedup_key(tmp_path: Path) -> None:
    with pagerduty_stub() as stub, scene(jobs=1, my=False) as s:
        cfg = tmp_path / "dbwatch.toml"
        cfg.write_text(
            f'[[targets]]\nname = "pg"\nurl = "{s.pg_url}"\ninterval = "1s"\n'
            '[rules.PG002]\nthresholds = { warning = "1s", critical = "1h" }\nfor = "0s"\n'
            f'[[alerts]]\nkind = "pagerduty"\nname = "pd"\nurl = "{stub.url}"\n'
            'routing_key = "${PD_ROUTING_KEY}"\ntimeout = "2s"\n'
        )
        state, log = tmp_path / "state.db", tmp_path / "daemon.log"
        subject = f"pid {s.idle_pid}"

        def mine(action: str) -> list[dict[str, Any]]:
            return [
                e for e in stub.of(action)
                if action == "resolve" or e["payload"]["custom_details"]["subject"] == subject
            ]

        proc = start(cfg, state, log)
        try:
            (trigger,) = wait_for(lambda: mine("trigger"), 30, "the trigger")
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0
        p = trigger["payload"]
        assert p["component"] == "PG002" and p["severity"] == "warning" and p["source"] == "pg"
        assert subject in p["summary"] and p["custom_details"]["evidence"]
        dedup = trigger["dedup_key"]
        assert trigger["routing_key"] == KEY

        with psycopg.connect(PG_URL, autocommit=True) as admin:  # the session ends
            admin.execute("SELECT pg_terminate_backend(%s)", (s.idle_pid,))
        proc = start(cfg, state, log)
        try:
            wait_for(lambda: [e for e in mine("resolve") if e["dedup_key"] == dedup], 30, "the resolve")
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0
        assert len([e for e in mine("trigger") if e["dedup_key"] == dedup]) == 1  # not re-sent
        assert stub.refused == []  # every event met the API's limits
        for e in stub.events:
            validate(e, "pagerduty")
        assert KEY not in log.read_text()
        assert KEY.encode() not in state.read_bytes()
