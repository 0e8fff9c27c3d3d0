"""`dbwatch status` and `dbwatch history` on state DBs written through the daemon's State:
state found from --config, stale daemon flagged, severity order, Nagios exit codes,
history over a window, completion scripts."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT
from web_fixtures import fill

from dbwatch.cli import main
from dbwatch.daemon.state import State
from dbwatch.findings import Finding
from schemas import load_json


def dbwatch(*args: str, columns: str = "100") -> subprocess.CompletedProcess[str]:
    """The CLI in-process (cli.main, as the entry point runs it), stdout/stderr captured."""
    saved = {k: os.environ.get(k) for k in ("COLUMNS", "DBWATCH_CONFIG")}
    os.environ["COLUMNS"] = columns
    os.environ.pop("DBWATCH_CONFIG", None)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def config(tmp_path: Path, state: Path, intervals: dict[str, str]) -> Path:
    cfg = tmp_path / "dbwatch.toml"
    body = f'[daemon]\nstate = "{state}"\n\n'
    for name, interval in intervals.items():
        body += f'[[targets]]\nname = "{name}"\nurl = "postgresql://u@h/{name}"\ninterval = "{interval}"\n\n'
    cfg.write_text(body)
    return cfg


def state_with(tmp_path: Path, severities: list[str], cycle_age: float = 1.0) -> Path:
    path = tmp_path / "state.db"
    st = State(path)
    now = time.time()
    st.update("t1", [Finding(f"PG00{i}", sev, "t1", f"pid {i}", f"summary {i}", "SELECT 1;",
                             identity=[i]) for i, sev in enumerate(severities)], now - 60)
    st.record_cycle("t1", now - cycle_age, 0.2, "ok", None, len(severities), 0.0)
    st.close()
    return path


def test_status_finds_the_state_from_the_config_and_flags_a_stale_daemon(tmp_path: Path) -> None:
    state = tmp_path / "s.db"
    fill(state, payload="")
    cfg = config(tmp_path, state, {"pg-main": "15s", "maria-queue": "60s"})
    out = dbwatch("status", "--config", str(cfg))
    assert out.returncode == 2, out.stderr  # critical firing wins over the stale target
    lines = out.stdout.splitlines()
    assert any("maria-queue" in ln and "stale" in ln for ln in lines)
    assert "STALE: no cycle of maria-queue" in out.stdout
    sev = [ln.split()[0] for ln in lines if ln.startswith(("CRITICAL", "WARNING", "UNKNOWN"))]
    assert sev == sorted(sev, key=["CRITICAL", "UNKNOWN", "WARNING"].index) and sev[0] == "CRITICAL"
    assert "hunter2" not in out.stdout
    assert max(len(ln) for ln in lines) <= 100 or "jobs_queue_reserved_at_index" in out.stdout
    doc = load_json(dbwatch("status", "--config", str(cfg), "--format", "json").stdout, "status")
    assert {t["target"]: t["status"] for t in doc["targets"]} == {"maria-queue": "stale",
                                                                   "pg-main": "ok"}
    assert doc["exit_code"] == 2 and doc["firing"][0]["severity"] == "critical"
    assert doc["firing"][0]["fix"]  # the whole fix is in the JSON


@pytest.mark.parametrize(("severities", "age", "code"), [
    ([], 1.0, 0),
    (["warning"], 1.0, 1),
    (["warning", "critical"], 1.0, 2),
    (["warning", "unknown"], 1.0, 3),
    (["warning"], 3600.0, 3),       # the daemon stopped an hour ago: what fires is not known
    ([], 3600.0, 3),
])
def test_status_exit_codes(tmp_path: Path, severities: list[str], age: float, code: int) -> None:
    state = state_with(tmp_path, severities, age)
    cfg = config(tmp_path, state, {"t1": "10s"})
    out = dbwatch("status", "--config", str(cfg))
    assert out.returncode == code, out.stdout + out.stderr
    if age > 60:
        assert "stale" in out.stdout


def test_status_without_state_is_one_clear_line(tmp_path: Path) -> None:
    cfg = config(tmp_path, tmp_path / "nowhere.db", {"t1": "10s"})
    out = dbwatch("status", "--config", str(cfg))
    assert out.returncode == 3 and "nowhere.db: no state database" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert not (tmp_path / "nowhere.db").exists()


def test_history_over_a_window(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    fill(path, payload="", deadlocks=12, hours=6)
    st = State(path)
    now = time.time()
    gone = Finding("PG001", "warning", "pg-main", "pid 7", "long transaction", "x", identity=[7])
    st.update("pg-main", [gone], now - 7200)
    st.update("pg-main", [], now - 3600)  # resolved an hour ago (the other pg-main findings too)
    st.close()
    doc = load_json(dbwatch("history", "--state", str(path), "--since", "2h", "--format", "json").stdout,
                    "history")
    assert any(r["rule"] == "PG001" and r["fired_for_seconds"] == 3600.0 for r in doc["resolved"])
    assert doc["deadlocks"]["total"] == 4  # 12 spread over 6 h: the last 2 h hold 4
    assert sum(doc["deadlocks"]["by_pattern"].values()) == 4
    assert len(doc["actions"]) == 3
    narrow = dbwatch("history", "--state", str(path), "--since", "30m")
    assert narrow.returncode == 0
    assert "DEADLOCKS (1)" in narrow.stdout or "DEADLOCKS (2)" in narrow.stdout
    assert dbwatch("history", "--state", str(path), "--since", "soon").returncode == 3


def test_completion_scripts() -> None:
    bash = dbwatch("completion", "bash")
    assert bash.returncode == 0 and "complete" in bash.stdout and "--since" in bash.stdout
    zsh = dbwatch("completion", "zsh")
    assert zsh.returncode == 0 and zsh.stdout.startswith("#compdef dbwatch")
    assert "history" in zsh.stdout and "--http" in zsh.stdout


def test_status_as_a_command(tmp_path: Path) -> None:
    """Once through the real entry point: exit code and output as cron/Nagios see them."""
    state = state_with(tmp_path, ["warning"], 1.0)
    cfg = config(tmp_path, state, {"t1": "10s"})
    out = subprocess.run([sys.executable, "-m", "dbwatch", "status", "--config", str(cfg)],
                         capture_output=True, text=True, cwd=ROOT, timeout=60,
                         env={**os.environ, "COLUMNS": "80"})
    assert out.returncode == 1 and "Status: WARNING" in out.stdout and "\x1b[" not in out.stdout


def test_status_fits_80_columns(tmp_path: Path) -> None:
    state = tmp_path / "s.db"
    fill(state, payload="")
    out = dbwatch("status", "--state", str(state), columns="80")
    assert out.returncode == 2
    for line in out.stdout.splitlines():
        assert len(line) <= 80 or "jobs_queue_reserved_at_index" in line, line
    assert "CRITICAL PG202 pg-main: table app.public.que_jobs" in out.stdout


def test_history_of_one_target(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    fill(path, payload="")
    doc = load_json(dbwatch("history", "--state", str(path), "--since", "24h", "--target",
                             "maria-queue", "--format", "json").stdout, "history")
    assert doc["fired"] and {f["target"] for f in doc["fired"]} == {"maria-queue"}
    assert doc["actions"] == []  # every action of the fixture is on pg-main
    assert doc["deadlocks"]["total"] == 12
