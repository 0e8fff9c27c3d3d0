"""The smaller things a newcomer tripped on (issue 24.6), each where it can fail: a bare name
that is no configured target, singular counts, a wrong-typed url said once, the status
scrubber and MySQL's "(using password: YES)", Laravel's QU001 naming the real queue."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dbwatch.catalogue import load_catalogue
from dbwatch.config import Config
from dbwatch.daemon.health import Miss, not_answering
from dbwatch.evaluate import Selection, evaluate
from dbwatch.snapshot import Snapshot
from dbwatch.sqlpatterns.detect import _times
from dbwatch.targets.secrets import redact

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "100"}
    return subprocess.run([sys.executable, "-m", "dbwatch", *args], capture_output=True,
                          text=True, timeout=60, env=env, cwd=ROOT)


def test_a_name_that_is_no_configured_target(tmp_path: Path) -> None:
    cfg = tmp_path / "dbwatch.toml"
    cfg.write_text('[[targets]]\nname = "app"\nurl = "postgresql://u@127.0.0.1:1/app"\n')
    proc = run("audit", "nosuchname", "--config", str(cfg))
    assert proc.returncode == 3
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no target named nosuchname" in lines[0], proc.stderr
    assert "configured: app" in lines[0] and "URL scheme" not in lines[0]


def test_a_wrong_typed_url_is_one_error(tmp_path: Path) -> None:
    cfg = tmp_path / "dbwatch.toml"
    cfg.write_text('[[targets]]\nname = "a"\nurl = 5\n')
    proc = run("config", "check", "--config", str(cfg))
    assert proc.returncode == 3
    assert proc.stderr.strip().splitlines() == [
        f"dbwatch: config error: {cfg}: targets[0].url: expected a string, got 5"]
    cfg.write_text('[[targets]]\nname = "a"\n')
    assert "targets[0].url: missing" in run("config", "check", "--config", str(cfg)).stderr


def test_one_is_singular(tmp_path: Path) -> None:
    cfg = tmp_path / "dbwatch.toml"
    cfg.write_text('[[targets]]\nname = "a"\nurl = "postgresql://u@127.0.0.1:1/app"\n')
    out = run("config", "check", "--config", str(cfg)).stdout
    assert "1 target," in out and "0 rule overrides" in out, out
    f = not_answering("t", Miss(1, "no answer within 2s"), 1, 2.0)
    assert "1 cycle missed" in f.summary and "1 cycles" not in f.summary
    assert not_answering("t", Miss(3, "x"), 1, 2.0).summary.count("3 cycles missed") == 1
    assert _times(1, 1) == "1 time in 1 transaction"
    assert _times(4, 2) == "4 times in 2 transactions"


def test_status_scrubber_keeps_mysqls_using_password_phrase() -> None:
    msg = ("cannot connect: (1045, \"Access denied for user 'nobody'@'localhost' "
           "(using password: YES)\")")
    assert redact(msg) == msg
    assert redact("password=hunter2 and pwd: s3cret") == "password=*** and pwd: ***"
    assert redact("mysql://u:s3cret@h/db") == "mysql://u:***@h/db"


def _qu001_fix(queue: str) -> str:
    snap = Snapshot("t", "mariadb", "10.11.6-MariaDB", 101106, 1_800_000_000.0, sections={
        "my.queues": {"tables": [{
            "schema": "app", "table": "jobs", "kind": "laravel_jobs", "library": "laravel",
            "rows_estimate": 100, "attempts_limit": 255, "window": 100000, "groups": 500,
            "summary": [{"queue": queue, "total": 60, "available": 50,
                         "oldest_available_seconds": 4000, "reserved": 0}]}]}})
    result = evaluate(snap, load_catalogue(), Config(), Selection(select=("QU001",)))
    (f,) = [f for f in result.findings if f.rule == "QU001"]
    return f.fix


def test_laravel_qu001_fix_names_the_real_queue() -> None:
    fix = _qu001_fix("emails")
    assert "queue:monitor <connection>:emails" in fix and "--queue=emails" in fix
    assert "database:default" not in fix
    hostile = _qu001_fix("x; rm -rf /")
    assert "<connection>:'x; rm -rf /'" in hostile  # queue names are data: shell-quoted
