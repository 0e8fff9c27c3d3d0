"""`audit`, `watch --once` and `status` give one verdict (findings.nagios_status, README's
exit table), and `deadlocks --history --config F` reads the state F names (issue 24.4)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dbwatch.findings import nagios_status

ROOT = Path(__file__).resolve().parent.parent


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # an empty XDG state dir: nothing may fall back to a default state that happens to exist
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg"), "COLUMNS": "120"}
    return subprocess.run([sys.executable, "-m", "dbwatch", *args], capture_output=True,
                          text=True, timeout=90, env=env, cwd=ROOT)


@pytest.mark.parametrize(("counts", "expected"), [
    ((1, 1, 1), ("critical", 2)),
    ((0, 1, 1), ("unknown", 3)),
    ((0, 0, 1), ("warning", 1)),
    ((0, 0, 0), ("ok", 0)),
])
def test_the_one_verdict(counts: tuple[int, int, int], expected: tuple[str, int]) -> None:
    assert nagios_status(*counts) == expected


def test_two_unreachable_targets_exit_3_in_audit_watch_once_and_status(tmp_path: Path) -> None:
    state = tmp_path / "state.db"
    cfg = tmp_path / "dbwatch.toml"
    cfg.write_text(
        f'[daemon]\nstate = "{state}"\n'
        '[[targets]]\nname = "gone-pg"\nurl = "postgresql://nobody@127.0.0.1:1/app"\n'
        '[[targets]]\nname = "gone-my"\nurl = "mysql://nobody@127.0.0.1:1/app"\n')
    audit = run(tmp_path, "audit", "--config", str(cfg))
    once = run(tmp_path, "watch", "--once", "--config", str(cfg), "--flush-timeout", "1")
    status = run(tmp_path, "status", "--config", str(cfg), "--format", "json")
    assert (audit.returncode, once.returncode, status.returncode) == (3, 3, 3), (
        audit.stdout, once.stderr, status.stdout)
    doc = json.loads(status.stdout)
    assert doc["status"] == "unknown"
    # DW001 fires (it says what could not be read) without making the verdict CRITICAL
    assert {f["rule"] for f in doc["firing"]} >= {"DW001"}


def test_deadlocks_history_reads_the_state_named_in_the_config(tmp_path: Path) -> None:
    state = tmp_path / "elsewhere" / "state.db"
    state.parent.mkdir()
    cfg = tmp_path / "dbwatch.toml"
    cfg.write_text(f'[daemon]\nstate = "{state}"\n'
                   '[[targets]]\nname = "gone"\nurl = "mysql://nobody@127.0.0.1:1/app"\n')
    missing = run(tmp_path, "deadlocks", "--history", "--config", str(cfg))
    assert missing.returncode == 3 and str(state) in missing.stderr, missing.stderr
    run(tmp_path, "watch", "--once", "--config", str(cfg), "--flush-timeout", "1")
    assert state.exists()
    got = run(tmp_path, "deadlocks", "--history", "--config", str(cfg), "--format", "json")
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout)["deadlocks"] == []
