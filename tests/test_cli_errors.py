"""Bad input: one line on stderr naming the target/file, exit 3, no traceback, no password."""
from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dbwatch", *args], capture_output=True,
                          text=True, timeout=60, env=env)


def assert_clean_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "s3cret" not in proc.stderr + proc.stdout
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines, "expected an error line"
    for needle in needles:
        assert any(needle in ln for ln in lines), (needle, lines)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_dead_target_exits_3_without_password() -> None:
    port = free_port()
    url = f"mysql://monitor:s3cret@127.0.0.1:{port}/app"
    proc = run("audit", url)
    assert_clean_error(proc, f"mysql://monitor@127.0.0.1:{port}/app")
    assert len([ln for ln in proc.stderr.splitlines() if "127.0.0.1" in ln]) == 1


def test_wrong_password_on_real_server() -> None:
    proc = run("audit", "mysql://root:s3cret@127.0.0.1:3306/test", "--format", "json")
    assert_clean_error(proc, "Access denied")
    assert '"status": "unknown"' in proc.stdout and "s3cret" not in proc.stdout


def test_non_database_port_and_unknown_scheme() -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    try:
        proc = run("audit", f"postgresql://x:s3cret@127.0.0.1:{port}/db")
    finally:
        srv.close()
    assert_clean_error(proc, "cannot connect")
    assert_clean_error(run("audit", "oracle://scott:s3cret@db/x"), "unknown URL scheme")


def test_other_targets_are_still_audited(own_pg_url: str) -> None:
    # a database of its own: a critical finding in the shared `test` would make the exit 2
    proc = run("audit", f"mysql://u:s3cret@127.0.0.1:{free_port()}/x", own_pg_url, "--format",
               "json")
    assert proc.returncode == 3
    assert '"status": "ok"' in proc.stdout      # the PostgreSQL target was read


def test_malformed_config_lists_every_error(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[[targets]]\nurl = "mysql://x:s3cret@h/db"\nevery = "5s"\n[rules.XX1]\n')
    proc = run("config", "check", "--config", str(cfg))
    assert_clean_error(proc, f"{cfg}: targets[0].every: unknown key", f"{cfg}: rules.XX1: no such rule")
    proc = run("audit", "--config", str(tmp_path / "missing.toml"))
    assert_clean_error(proc, "missing.toml: no such file")


def test_explain_unknown_rule() -> None:
    proc = run("explain", "XX999")
    assert_clean_error(proc, "no rule 'XX999'")
    ok = run("explain", "qu301")
    assert ok.returncode == 0 and "FIX" in ok.stdout and "(queue)" in ok.stdout
