"""Probe connections kept between daemon cycles, never more than N sessions to one server.

Opening a labelled, read-only session costs a TCP/TLS handshake, authentication and a few
SETs on every cycle; the daemon keeps each target's session instead. However many targets
point at one server (databases of one cluster, schemas of one MariaDB), at most
`per_server` sessions to it are open at once: a target that needs one beyond the cap takes
the place of the least recently used idle session, or waits for one to come back. A kept
session that turns out dead is replaced once, at once (reconnect on failure).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import field
from functools import lru_cache
from urllib.parse import urlsplit

from ..errors import TargetError
from ..frozen import mutable
from . import Connection, TargetSpec, in_use, open_target

log = logging.getLogger(__name__)


def server_key(spec: TargetSpec) -> str:
    """engine://host:port — the server a target's sessions land on (databases share it)."""
    return _server_key(spec.engine, spec.url)


@lru_cache(maxsize=8192)
def _server_key(engine: str, url: str) -> str:
    """Parsed once per URL (every checkout and checkin asks)."""
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname or ""
    except ValueError:
        host, port = url, None
    return f"{engine}://{host}:{port or ''}"


@mutable
class _Server:
    open: int = 0  # sessions open to this server: idle + in use
    # idle sessions, least recently used first (eviction), and the same by target URL
    # (checkout): a lookup, not a scan of the 2,000 idle sessions of a large fleet
    idle: OrderedDict[int, tuple[str, Connection, float]] = field(default_factory=OrderedDict)
    by_url: dict[str, dict[int, None]] = field(default_factory=dict)

    def put(self, url: str, conn: Connection) -> None:
        self.idle[id(conn)] = (url, conn, time.monotonic())
        self.by_url.setdefault(url, {})[id(conn)] = None

    def take(self, ident: int) -> tuple[str, Connection, float]:
        url, conn, since = self.idle.pop(ident)
        mine = self.by_url[url]
        del mine[ident]
        if not mine:
            del self.by_url[url]
        return url, conn, since

    def oldest(self) -> Connection:
        return self.take(next(iter(self.idle)))[1]


class ConnectionPool:
    def __init__(self, per_server: int = 10, max_idle: float = 300.0, wait: float = 5.0) -> None:
        if per_server < 1:
            raise ValueError("per_server must be at least 1")
        self.per_server = per_server
        self.max_idle = max_idle
        self.wait = wait
        # the condition's own lock, taken directly (C) where nothing waits on the condition;
        # `_waiting` counts the checkouts waiting, so a checkin notifies only when one does
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._waiting = 0
        self._servers: dict[str, _Server] = {}
        self.opened = 0
        self.reused = 0

    def checkout(self, spec: TargetSpec) -> tuple[Connection, bool]:
        """(connection, reused). Opens one if the target has none idle, within the cap."""
        key = server_key(spec)
        evicted: list[Connection] = []
        deadline = time.monotonic() + self.wait
        with self._lock:
            srv = self._servers.setdefault(key, _Server())
            while True:
                for ident in list(srv.by_url.get(spec.url, ())):
                    _, conn, since = srv.take(ident)
                    if time.monotonic() - since > self.max_idle:
                        evicted.append(conn)  # kept too long: the server may have cut it
                        srv.open -= 1
                        continue
                    self.reused += 1
                    self._close_all(evicted)
                    in_use(conn)  # a kept session: the cycle's deadline may shut it
                    return conn, True
                if srv.open < self.per_server:
                    break
                if srv.idle:  # make room: close the least recently used idle session
                    evicted.append(srv.oldest())
                    srv.open -= 1
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    self._close_all(evicted)
                    raise TargetError(
                        spec.name,
                        f"all {self.per_server} sessions to {key} are busy "
                        "(daemon.max_connections_per_server)",
                    )
                self._waiting += 1
                try:
                    self._cond.wait(left)
                finally:
                    self._waiting -= 1
            srv.open += 1
        self._close_all(evicted)
        try:
            conn = open_target(spec)
        except BaseException:
            with self._lock:
                srv.open -= 1
                if self._waiting:
                    self._cond.notify()
            raise
        self.opened += 1
        return conn, False

    def checkin(self, spec: TargetSpec, conn: Connection, broken: bool = False) -> None:
        """Give a session back; a broken one is closed and its place freed."""
        key = server_key(spec)
        with self._lock:
            srv = self._servers.setdefault(key, _Server())
            if broken:
                srv.open -= 1
            else:
                srv.put(spec.url, conn)
            if self._waiting:
                self._cond.notify()
        if broken:
            self._close_all([conn])

    def discard(self, url_prefix: str = "") -> None:
        """Close idle sessions (all, or of targets whose URL starts with url_prefix)."""
        closing: list[Connection] = []
        with self._lock:
            for srv in self._servers.values():
                for ident, (url, _, _) in list(srv.idle.items()):
                    if url.startswith(url_prefix):
                        closing.append(srv.take(ident)[1])
                        srv.open -= 1
            self._cond.notify_all()
        self._close_all(closing)

    def sessions(self) -> dict[str, int]:
        with self._lock:
            return {k: s.open for k, s in self._servers.items()}

    @staticmethod
    def _close_all(conns: list[Connection]) -> None:
        for c in conns:
            try:
                c.close()
            except Exception:  # closing a dead session must not fail the cycle
                log.debug("closing a pooled session failed", exc_info=True)
