"""The dashboard's HTTP server: stdlib ThreadingHTTPServer in a daemon thread, GET/HEAD only.

Safe by default: 127.0.0.1 unless an address is given; with a token every page but /metrics
needs `Authorization: Bearer <token>`, `?token=<token>` (which also sets an HttpOnly cookie so
links need not carry it) or that cookie; strict CSP (no script at all, the one inline
stylesheet allowed by its hash), nosniff, no referrer, no framing; every response bounded.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import threading
import time
from collections.abc import Callable
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from markupsafe import Markup

from ..statereader import StateReader
from .pages import Pages
from .view import Site

log = logging.getLogger(__name__)
MAX_PARAM = 200  # characters of one query-string value
COOKIE = "dbwatch_session"


def parse_address(address: str, default_port: int = 9188) -> tuple[str, int]:
    """HOST:PORT, :PORT or PORT; no host means 127.0.0.1 (never every interface by default)."""
    text = address.strip()
    if text.isdigit():
        return "127.0.0.1", int(text)
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = text, str(default_port)
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"not a port: {port!r} (use HOST:PORT, e.g. 127.0.0.1:9188)")
    return host, int(port)


class Dashboard:
    """Everything a request needs; `site` and `metrics` are read at request time (SIGHUP-safe)."""

    def __init__(
        self,
        state_path: str | Path,
        site: Callable[[], Site] = Site,
        token: str | None = None,
        metrics: Callable[[], bytes] | None = None,
        reader: Callable[[], StateReader] | None = None,
    ) -> None:
        self.state_path = Path(state_path)
        self.token = token or None
        self.metrics = metrics
        self.pages = Pages(reader or (lambda: StateReader(self.state_path)), site)
        loader = self.pages.env.loader
        assert loader is not None
        css = loader.get_source(self.pages.env, "dashboard.css")[0]
        self.pages.env.globals["css"] = Markup(css)
        digest = base64.b64encode(hashlib.sha256(css.encode()).digest()).decode()
        self.csp = (
            "default-src 'none'; "
            f"style-src 'sha256-{digest}'; "
            "img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
        )
        self.session = (
            hmac.new(self.token.encode(), b"dbwatch-dashboard-session", "sha256").hexdigest()
            if self.token
            else ""
        )
        self.routes: dict[str, Callable[[dict[str, str]], str]] = {
            "/": self.pages.index,
            "/deadlocks": self.pages.deadlocks,
            "/history": self.pages.history,
            "/actions": self.pages.actions,
        }


class Handler(BaseHTTPRequestHandler):
    server_version = "dbwatch"
    sys_version = ""
    dash: Dashboard  # set on the subclass made by serve()

    def log_message(self, fmt: str, *args: Any) -> None:
        log.debug("http %s " + fmt, self.address_string(), *args)

    # -- plumbing ------------------------------------------------------------------------------

    def _send(
        self, code: int, body: bytes, ctype: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", self.dash.csp)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _text(self, code: int, text: str, extra: dict[str, str] | None = None) -> None:
        self._send(code, (text + "\n").encode(), "text/plain; charset=utf-8", extra)

    def _authorised(self, query: dict[str, str]) -> tuple[bool, dict[str, str]]:
        token = self.dash.token
        if token is None:
            return True, {}
        given = self.headers.get("Authorization", "")
        if given.lower().startswith("bearer ") and hmac.compare_digest(
            given[7:].strip().encode(), token.encode()
        ):
            return True, {}
        if "token" in query and hmac.compare_digest(query["token"].encode(), token.encode()):
            cookie = f"{COOKIE}={self.dash.session}; Path=/; HttpOnly; SameSite=Strict"
            return True, {"Set-Cookie": cookie}
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(self.headers.get("Cookie", ""))
        except Exception:  # noqa: BLE001 (a malformed Cookie header is simply no session)
            return False, {}
        morsel = jar.get(COOKIE)
        if morsel is not None and hmac.compare_digest(
            morsel.value.encode(), self.dash.session.encode()
        ):
            return True, {}
        return False, {}

    # -- methods -------------------------------------------------------------------------------

    def do_GET(self) -> None:
        started = time.process_time()
        parts = urlsplit(self.path)
        query = {k: v[:MAX_PARAM] for k, v in parse_qsl(parts.query, keep_blank_values=True)}
        path = parts.path.rstrip("/") or "/"
        if path == "/metrics" and self.dash.metrics is not None:
            self._send(200, self.dash.metrics(), "text/plain; version=0.0.4; charset=utf-8")
            return
        if path == "/favicon.ico":
            self._send(204, b"", "image/x-icon")
            return
        ok, extra = self._authorised(query)
        if not ok:
            self._text(
                401,
                "dbwatch: this dashboard needs its token: Authorization: Bearer <token> or ?token=",
                {"WWW-Authenticate": 'Bearer realm="dbwatch"'},
            )
            return
        route = self.dash.routes.get(path)
        if route is None:
            self._text(
                404, f"dbwatch: no page {path[:100]!r}; pages: / /deadlocks /history /actions"
            )
            return
        query.pop("token", None)
        try:
            html = route(query)
        except FileNotFoundError:
            self._text(503, "dbwatch: no state database yet (the daemon has not written it)")
            return
        except Exception:  # one broken page must not take the daemon's server down
            log.exception("dashboard page %s failed", path)
            self._text(500, "dbwatch: this page failed; the daemon log has the details")
            return
        self._send(200, html.encode(), "text/html; charset=utf-8", extra)
        log.debug("page %s: %.1f ms CPU", path, (time.process_time() - started) * 1000)

    def do_HEAD(self) -> None:
        self.do_GET()

    def _refuse(self) -> None:
        self._text(
            405, "dbwatch: the dashboard is read-only (GET and HEAD only)", {"Allow": "GET, HEAD"}
        )

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 16


def serve(address: str, dash: Dashboard) -> ThreadingHTTPServer:
    """Bind (raises OSError/ValueError) and serve in a daemon thread; `.shutdown()` stops it."""
    host, port = parse_address(address)
    handler = type("DashboardHandler", (Handler,), {"dash": dash})
    server = _Server((host, port), handler)
    if not dash.token and host not in ("127.0.0.1", "::1", "localhost"):
        log.warning(
            "dashboard on %s without [http] token: anyone who reaches that address can read "
            "findings and query text",
            host,
        )
    threading.Thread(target=server.serve_forever, name="dbwatch-http", daemon=True).start()
    log.info(
        "dashboard on http://%s:%d/ (%s)",
        host,
        server.server_address[1],
        "token required" if dash.token else "no token",
    )
    return server
