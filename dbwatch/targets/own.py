"""dbwatch's own sessions, by connection id per server: pg_backend_pid() / CONNECTION_ID() of
every connection this process has open. An application name can be chosen by anyone, so
terminate recognises its own sessions by these ids only."""

from __future__ import annotations

import threading


class OwnSessions:
    """Thread-safe set of (server, connection id) for the connections open in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids: dict[str, set[int]] = {}

    def add(self, server: str, conn_id: int) -> None:
        with self._lock:
            self._ids.setdefault(server, set()).add(conn_id)

    def discard(self, server: str, conn_id: int) -> None:
        with self._lock:
            ids = self._ids.get(server)
            if ids is not None:
                ids.discard(conn_id)
                if not ids:
                    del self._ids[server]

    def ids(self, server: str) -> frozenset[int]:
        with self._lock:
            return frozenset(self._ids.get(server, ()))


OWN_SESSIONS = OwnSessions()


def server_key(engine: str, host: object, port: object) -> str:
    """Which server a connection reached, as far as the client can tell."""
    return f"{engine}://{host or 'local'}:{port or ''}"
