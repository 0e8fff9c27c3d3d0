"""The dashboard over a filled state DB, through real HTTP on loopback (no browser): escaping,
headers, token, read-only, bounded pages, filters, redaction. tests/live/test_dashboard_live.py
drives a real Chromium against a daemon watching the real PostgreSQL."""
from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from web_fixtures import PAYLOAD, fill

from dbwatch.web.view import Site
from dbwatch.web.server import Dashboard, parse_address, serve

TOKEN = "s3cret-token-for-tests"
PAGES = ("/", "/deadlocks", "/history", "/actions")


class Audit(HTMLParser):
    """Collects what would run in a browser: script elements and on* attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts = 0
        self.handlers: list[tuple[str, str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "script":
            self.scripts += 1
        for k, _ in attrs:
            if k.lower().startswith("on"):
                self.handlers.append((tag, k))


def get(url: str, headers: dict[str, str] | None = None, method: str = "GET") -> tuple[int, dict[str, str], str]:
    req = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def _start(state: Path, token: str | None = None) -> Any:
    site = Site({"pg-main": 15.0, "maria-queue": 60.0}, {"pg-main": "postgresql"})
    dash = Dashboard(state, lambda: site, token=token, metrics=lambda: b"dbwatch_up 1\n")
    return serve("127.0.0.1:0", dash)


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("web") / "state.db"
    fill(path)
    return path


@pytest.fixture(scope="module")
def base(filled: Path) -> Iterator[str]:
    srv = _start(filled)
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


@pytest.mark.parametrize("page", PAGES)
def test_untrusted_text_is_escaped_and_nothing_can_run(base: str, page: str) -> None:
    code, headers, body = get(base + page)
    assert code == 200
    audit = Audit()
    audit.feed(body)
    assert audit.scripts == 0 and audit.handlers == []
    assert "&lt;script&gt;document.title=" in body  # shown, as text
    assert PAYLOAD not in body
    csp = headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp and "script-src" not in csp  # default-src 'none' covers it
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"


def test_overview_shows_targets_findings_and_the_whole_fix(base: str) -> None:
    _, _, body = get(base + "/")
    assert "stale" in body  # maria-queue's last cycle is an hour old at a 60 s interval
    assert "VACUUM (VERBOSE) test.public.que_jobs_story_with_a_long_name;" in body
    assert body.index("PG202") < body.index("QU301")  # critical before warning
    assert "hunter2" not in body and "monitor:***@db2" in body  # URL password redacted


def test_history_has_svg_charts_with_marks(base: str) -> None:
    _, _, body = get(base + "/history?since=24h")
    assert body.count('<svg class="chart"') >= 5
    assert 'class="mark action"' in body and 'class="mark critical"' in body
    assert "dead tuples per table" in body and "InnoDB history list length" in body


def test_deadlocks_filter_by_pattern_table_and_target(base: str) -> None:
    _, _, body = get(base + "/deadlocks")
    assert "12 recorded" in body and "<svg" in body
    _, _, one = get(base + "/deadlocks?pattern=queue-claim-vs-delete")
    shown = re.findall(r'badge warning">([^<]+)<', one)
    assert shown and set(shown) == {"queue-claim-vs-delete"}
    _, _, none = get(base + "/deadlocks?target=nope")
    assert "No deadlock recorded matches this filter" in none
    _, _, evil = get(base + "/deadlocks?table=" + urllib.request.quote("<b>x</b>"))
    assert "&lt;b&gt;x&lt;/b&gt;" in evil and "<b>x</b>" not in evil


def test_read_only_methods(base: str) -> None:
    for method in ("POST", "PUT", "DELETE"):
        code, headers, _ = get(base + "/", method=method)
        assert code == 405 and headers["Allow"] == "GET, HEAD"
    code, _, body = get(base + "/", method="HEAD")
    assert code == 200 and body == ""


def test_token_guards_every_page_but_metrics(filled: Path) -> None:
    srv = _start(filled, TOKEN)
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        for page in PAGES:
            assert get(url + page)[0] == 401
            assert get(url + page, {"Authorization": "Bearer wrong-token"})[0] == 401
            assert get(url + page, {"Authorization": f"Bearer {TOKEN}"})[0] == 200
        assert get(url + "/?token=nope")[0] == 401
        code, headers, body = get(url + f"/history?token={TOKEN}")
        assert code == 200 and TOKEN not in body
        cookie = headers["Set-Cookie"].split(";")[0]
        assert "HttpOnly" in headers["Set-Cookie"] and TOKEN not in cookie
        assert get(url + "/actions", {"Cookie": cookie})[0] == 200
        assert get(url + "/actions", {"Cookie": "dbwatch_session=forged"})[0] == 401
        code, _, metrics = get(url + "/metrics")
        assert code == 200 and "dbwatch_up" in metrics
    finally:
        srv.shutdown()


def test_pages_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "big.db"
    fill(path, findings=300, deadlocks=60, actions=150, payload="")
    srv = _start(path)
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        _, _, body = get(url + "/")
        assert body.count('class="card finding') == 100 and "page 1 of 3" in body
        _, _, last = get(url + "/?page=2")
        assert last.count('class="card finding') == 100
        _, _, dls = get(url + "/deadlocks")
        assert dls.count("<div class=\"label\">locks</div>") == 20 and "page 1 of 3" in dls
        _, _, acts = get(url + "/actions?page=1")
        assert acts.count('<td class="when">') == 50
    finally:
        srv.shutdown()


def test_missing_state_is_a_clear_503(tmp_path: Path) -> None:
    srv = _start(tmp_path / "absent.db")
    try:
        code, _, body = get(f"http://127.0.0.1:{srv.server_address[1]}/")
        assert code == 503 and "no state database" in body
        assert not (tmp_path / "absent.db").exists()  # never created by a reader
    finally:
        srv.shutdown()


def test_address_defaults_to_loopback() -> None:
    assert parse_address("9188") == ("127.0.0.1", 9188)
    assert parse_address(":9188") == ("127.0.0.1", 9188)
    assert parse_address("0.0.0.0:80") == ("0.0.0.0", 80)
    assert parse_address("[::1]:9188") == ("::1", 9188)
    with pytest.raises(ValueError):
        parse_address("127.0.0.1:http")


def test_http_config_section(tmp_path: Path) -> None:
    from dbwatch.config import parse_config
    from dbwatch.errors import ConfigError

    cfg = parse_config({"http": {"address": "127.0.0.1:9188", "token": "long-enough-token"}}, "f")
    assert cfg.http.address == "127.0.0.1:9188" and cfg.http.token == "long-enough-token"
    with pytest.raises(ConfigError) as exc:
        parse_config({"http": {"token": "short", "tls": True}}, "f")
    text = "\n".join(exc.value.problems)
    assert "http.token: too short" in text and "http.tls: unknown key" in text
    assert "short" not in text.replace("too short", "")  # the secret itself is never printed


def test_watch_http_bad_address_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    from dbwatch.cli import main

    cfg = tmp_path / "c.toml"
    cfg.write_text('[[targets]]\nname = "t"\nurl = "postgresql://u@127.0.0.1:1/x"\n')
    state = str(tmp_path / "s.db")
    assert main(["watch", "--config", str(cfg), "--state", state, "--http", "127.0.0.1:http"]) == 3
    err = capsys.readouterr().err
    assert "--http 127.0.0.1:http: not a port" in err and "Traceback" not in err
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["watch", "--config", str(cfg), "--state", state, "--http", f"127.0.0.1:{port}"]) == 3
    assert f"--http 127.0.0.1:{port}:" in capsys.readouterr().err
