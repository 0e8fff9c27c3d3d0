"""Secrets never leave (issue 18.7): a password with every reserved character, in URLs on the
command line and in a config, grepped (whole and every 4-character fragment) in stdout, stderr,
JSON, the state DB, the daemon's log and the alert payloads of a local recording receiver."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pymysql
import pytest

# every character URLs reserve, plus quotes, backslash and spaces
PASSWORD = "Kv8/Q#w?E@r:T[y]U%4i&O=p+A s;D'f\"G\\h$J!k*L,Zx"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def leaks(text: str | bytes) -> list[str]:
    """The password's fragments (>= 4 characters) found in text, case-insensitively."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    low = text.lower()
    return [PASSWORD[i:i + 4] for i in range(len(PASSWORD) - 3)
            if PASSWORD[i:i + 4].lower() in low]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dbwatch", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture
def my_user(my_admin: pymysql.Connection, uniq: str) -> Iterator[str]:
    user = f"sec_{uniq}"
    cur = my_admin.cursor()
    cur.execute(f"CREATE USER '{user}'@'%%' IDENTIFIED BY %s", (PASSWORD,))
    cur.execute(f"GRANT PROCESS ON *.* TO '{user}'@'%'")
    cur.execute(f"GRANT SELECT ON test.* TO '{user}'@'%'")
    yield user
    cur.execute(f"DROP USER '{user}'@'%'")


class Recorder:
    def __init__(self) -> None:
        bodies: list[bytes] = []
        self.bodies = bodies

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                bodies.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_raw_password_with_every_reserved_character_connects(my_user: str) -> None:
    url = f"mysql://{my_user}:{PASSWORD}@127.0.0.1:3306/test"
    proc = run("audit", url, "--select", "MY5", "--format", "json")
    doc = json.loads(proc.stdout)
    assert doc["targets"][0]["status"] == "ok", proc.stderr
    assert not leaks(proc.stdout + proc.stderr)


def test_postgres_url_with_the_same_password_parses_and_connects() -> None:
    # the local server trusts 127.0.0.1: the password is sent and ignored, the URL must parse
    url = f"postgresql://postgres:{PASSWORD}@127.0.0.1:5432/test"
    proc = run("audit", url, "--select", "PG5", "--format", "json")
    doc = json.loads(proc.stdout)
    assert doc["targets"][0]["status"] == "ok", proc.stderr
    assert not leaks(proc.stdout + proc.stderr)


def test_wrong_password_and_dead_ports_leak_nothing(my_user: str) -> None:
    dead = free_port()
    urls = [
        f"mysql://{my_user}:{PASSWORD}x@127.0.0.1:3306/test",          # access denied
        f"mysql://{my_user}:{PASSWORD}@127.0.0.1:{dead}/test",         # refused
        f"postgresql://u:{PASSWORD}@127.0.0.1:{dead}/db",              # refused
        f"postgresql://u:{PASSWORD}@[127.0.0.1/db",                    # unparseable
        f"mysql://u:{PASSWORD}@127.0.0.1:99999/db",                    # bad port
    ]
    for n, url in enumerate(urls):
        for fmt in ("table", "json") if n < 2 else ("json",):
            proc = run("audit", url, "--format", fmt)
            assert proc.returncode == 3, (url, proc.stderr)
            assert "Traceback" not in proc.stderr
            assert not leaks(proc.stdout + proc.stderr), (url, proc.stdout, proc.stderr)


def test_daemon_log_state_and_alert_payloads_leak_nothing(my_user: str, tmp_path: Path) -> None:
    rec = Recorder()
    pwfile = tmp_path / "pw"
    pwfile.write_text(PASSWORD + "\n")
    dead = free_port()
    targets = {
        "good": f"mysql://{my_user}:{PASSWORD}@127.0.0.1:3306/test",
        "wrong": f"mysql://{my_user}:{PASSWORD}y@127.0.0.1:3306/test",
        "deadmy": f"mysql://{my_user}:{PASSWORD}@127.0.0.1:{dead}/test",
        "deadpg": f"postgresql://u:{PASSWORD}@127.0.0.1:{dead}/db",
    }
    cfg = "".join(f"[[targets]]\nname = {json.dumps(n)}\nurl = {json.dumps(u)}\n"
                  for n, u in targets.items())
    cfg += (f"[[targets]]\nname = \"fromfile\"\nurl = \"mysql://{my_user}@127.0.0.1:3306/test\"\n"
            f"password_file = {json.dumps(str(pwfile))}\n")
    cfg += f"[[alerts]]\nkind = \"webhook\"\nurl = {json.dumps(rec.url)}\nmin_severity = \"warning\"\n"
    path = tmp_path / "dbwatch.toml"
    path.write_text(cfg)
    state = tmp_path / "state.db"
    try:
        check = run("config", "check", "--config", str(path))
        assert check.returncode == 0, check.stderr
        proc = run("watch", "--once", "--config", str(path), "--state", str(state),
                   "--flush-timeout", "5", "--debug")
        status = run("status", "--state", str(state))
    finally:
        rec.close()
    assert proc.returncode in (2, 3), proc.stderr    # unreachable targets: critical DW001
    assert rec.bodies, "the unreachable targets must have been alerted"
    assert b"target unreachable" in b"".join(rec.bodies)
    everything = [proc.stdout, proc.stderr, status.stdout, status.stderr, *rec.bodies,
                  state.read_bytes()]
    for part in everything:
        assert not leaks(part), (leaks(part), part[:2000])
    assert "fromfile" in status.stdout
    bad = [line for line in status.stdout.splitlines() if "fromfile" in line or "good" in line]
    assert bad and not any("unreachable" in line for line in bad), status.stdout


def test_a_password_quoted_in_another_sessions_query_is_masked(tmp_path: Path) -> None:
    import time

    import psycopg
    from conftest import PG_URL
    busy = psycopg.connect(PG_URL, autocommit=True, application_name="leaky-admin")

    def sleep() -> None:
        try:
            busy.execute(f"SELECT pg_sleep(60), $q${PASSWORD}$q$")
        except psycopg.Error:
            pass
    t = threading.Thread(target=sleep, daemon=True)
    t.start()
    cfg = tmp_path / "c.toml"
    cfg.write_text('[rules.PG001]\nthresholds = { warning = "1s" }\n')
    try:
        time.sleep(2.0)
        url = f"postgresql://postgres:{PASSWORD}@127.0.0.1:5432/test"
        outs = [run("audit", url, "--config", str(cfg), "--select", "PG001", "--format", fmt)
                for fmt in ("json", "table", "markdown")]
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute("SELECT pg_cancel_backend(%s)", (busy.info.backend_pid,))
        t.join(10)
        busy.close()
    doc = json.loads(outs[0].stdout)
    mine = [f for f in doc["findings"] if f["evidence"].get("application") == "leaky-admin"]
    assert mine and "pg_sleep(60)" in mine[0]["evidence"]["query"]
    for proc in outs:
        assert not leaks(proc.stdout + proc.stderr), leaks(proc.stdout)
