"""A real Chromium (Debian's, driven by Playwright with executable_path) against `dbwatch watch
--http` watching the real PostgreSQL, where a session sits idle in transaction with script
payloads in its query text and application_name: pages load without console errors, the
payloads show as text and run nothing, CSP is sent, the token is enforced, /history has SVG."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import PG_URL, ROOT

CHROMIUM = "/usr/bin/chromium"
TOKEN = "live-dashboard-token-1"
SCRIPT = "<script>document.title='pwned-script'</script>"
IMG = "<img src=x onerror=\"document.title='pwned-img'\">"

pytestmark = [
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian chromium not installed (apt-get install chromium)"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="pip package playwright not installed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fetch(url: str, token: str | None = TOKEN) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


@pytest.fixture
def idle_payload_session(uniq: str) -> Iterator[int]:
    conn = psycopg.connect(PG_URL, autocommit=False, application_name=f"x{IMG}"[:63])
    with conn.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        pid = int(cur.fetchone()[0])  # type: ignore[index]
        cur.execute(f"SELECT $q${SCRIPT}$q$ AS a, $q${IMG}$q$ AS b, '{uniq}' AS c")
        cur.fetchall()
    yield pid  # the transaction stays open: idle in transaction, query text = the payload
    conn.rollback()
    conn.close()


@pytest.fixture
def daemon(tmp_path: Path, idle_payload_session: int) -> Iterator[tuple[str, int, int]]:
    port, metrics_port = free_port(), free_port()
    cfg = tmp_path / "dbwatch.toml"
    cfg.write_text(
        f'[[targets]]\nname = "pg-live"\nurl = "{PG_URL}"\ninterval = "2s"\n\n'
        '[rules.PG002]\nthresholds = { warning = "1s", critical = "1h" }\nfor = "0s"\n\n'
        '[http]\ntoken = "${DBW_DASH_TOKEN}"\n'
    )
    log = (tmp_path / "daemon.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "dbwatch", "watch", "--config", str(cfg), "--state",
         str(tmp_path / "state.db"), "--http", f"127.0.0.1:{port}",
         "--metrics-address", f"127.0.0.1:{metrics_port}"],
        stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
        env={**os.environ, "DBW_DASH_TOKEN": TOKEN},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            code, body = fetch(base + "/")
            if code == 200 and f"pid {idle_payload_session}" in body:
                _, hist = fetch(base + "/history?since=1h")
                if hist.count('class="series"') >= 1:
                    break
            assert proc.poll() is None, (tmp_path / "daemon.log").read_text()[-2000:]
            time.sleep(0.5)
        else:
            pytest.fail("the daemon never showed the idle session: "
                        + (tmp_path / "daemon.log").read_text()[-2000:])
        yield base, idle_payload_session, metrics_port
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def test_dashboard_in_a_real_browser(daemon: tuple[str, int, int], tmp_path: Path) -> None:
    base, pid, metrics_port = daemon
    assert fetch(base + "/", token=None)[0] == 401
    code, metrics = fetch(base + "/metrics", token=None)
    assert code == 200 and 'dbwatch_target_up{target="pg-live"} 1.0' in metrics
    code, metrics = fetch(f"http://127.0.0.1:{metrics_port}/metrics", token=None)
    assert code == 200 and "dbwatch_target_up" in metrics  # --metrics-address still works
    shots = Path(os.environ.get("DBWATCH_SCREENSHOTS", tmp_path))
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            problems: list[str] = []
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                    if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
            page.on("dialog", lambda d: problems.append(f"dialog: {d.message}"))

            resp = page.goto(base + "/")
            assert resp is not None and resp.status == 401  # no token, no page
            problems.clear()  # that 401 is logged as a console error, as it should be
            resp = page.goto(base + f"/?token={TOKEN}")
            assert resp is not None and resp.status == 200
            csp = resp.headers["content-security-policy"]
            assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
            for path in ("/", "/deadlocks", "/history", "/actions"):
                resp = page.goto(base + path)  # the HttpOnly cookie from ?token= carries on
                assert resp is not None and resp.status == 200, path
                assert "content-security-policy" in resp.headers
                page.wait_for_load_state("load")
                assert "pwned" not in page.title()
                assert page.locator("script").count() == 0
                assert page.locator("img").count() == 0
                if path != "/":
                    page.screenshot(path=str(shots / f"dashboard{path.replace('/', '-')}.png"))
                if path == "/":
                    text = page.inner_text("body")
                    assert f"pid {pid}" in text
                    card = page.locator(".finding", has_text=f"pid {pid}").first
                    card.locator("details summary").click()  # evidence opens without JavaScript
                    shown = card.inner_text()
                    assert SCRIPT in shown and "onerror=" in shown  # the payload, as text
                    assert "pg_terminate_backend" in shown
                    card.scroll_into_view_if_needed()
                    page.screenshot(path=str(shots / "dashboard-live-payload.png"))
                if path == "/history":
                    assert page.locator("svg.chart").count() >= 1
                    assert page.locator("svg.chart polyline").count() >= 1
            assert problems == [], problems
        finally:
            browser.close()
