"""Hanging-server simulator: loopback TCP listeners that accept and never answer, or that
start the PostgreSQL / MySQL handshake and stall in the middle of it.

Modes:
  silent    accept the connection, never read or write (a SIGSTOPped server, a black-holed
            proxy that completed the TCP handshake).
  pg-stall  answer PostgreSQL's SSLRequest with 'N' (no TLS), read the startup message,
            never send the authentication request.
  my-stall  send the first bytes of a MySQL handshake packet (a header announcing more),
            then nothing.
  stall     pg-stall for a client that speaks first, my-stall for one that waits.

FreezeProxy forwards to a real server and stops forwarding `freeze_after` seconds into each
connection: the handshake completes, then the server "freezes" mid-session (a stopped
process, a dead network path) -- what only a client-side deadline can end.

Used by tests/live/test_hanging_targets.py and contrib/bench/bench_hanging.py.
"""

from __future__ import annotations

import select
import selectors
import socket
import threading
from types import TracebackType

MODES = ("silent", "pg-stall", "my-stall", "stall")


class HangServer:
    """One listener on 127.0.0.1:<port>; accepted sockets are held until the client gives up
    (then closed) or close(). One selector thread, so thousands of hung clients are fine."""

    def __init__(self, mode: str = "silent", backlog: int = 1024) -> None:
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}: one of {MODES}")
        self.mode = mode
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(backlog)
        self.sock.setblocking(False)
        self.port = int(self.sock.getsockname()[1])
        self.accepted = 0
        self.held: set[socket.socket] = set()
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.sock, selectors.EVENT_READ)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name=f"hang-{self.port}", daemon=True)
        self._thread.start()

    def url(self, scheme: str = "postgresql", database: str = "db") -> str:
        user = "postgres" if scheme.startswith("postgres") else "root"
        return f"{scheme}://{user}@127.0.0.1:{self.port}/{database}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._sel.select(0.2):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self.sock:
                    self._accept()
                else:
                    self._readable(sock)

    def _accept(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        conn.setblocking(False)
        self.accepted += 1
        self.held.add(conn)
        self._sel.register(conn, selectors.EVENT_READ)
        if self.mode in ("my-stall", "stall"):
            try:
                # a protocol-10 greeting announced as 78 bytes, of which only 6 arrive
                conn.send(b"\x4e\x00\x00\x00\x0a5.")
            except OSError:
                pass

    def _readable(self, conn: socket.socket) -> None:
        try:
            data = conn.recv(65536)
        except OSError:
            data = b""
        if not data:  # the client gave up: let its socket go
            self._sel.unregister(conn)
            self.held.discard(conn)
            conn.close()
            return
        # pg-stall: answer the SSLRequest (code 80877103) with 'N' (no TLS); the startup
        # message that follows is read and never answered. silent reads and says nothing.
        if self.mode in ("pg-stall", "stall") and data[4:8] == b"\x04\xd2\x16\x2f":
            try:
                conn.send(b"N")
            except OSError:
                pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self._sel.close()
        self.sock.close()
        for c in list(self.held):
            try:
                c.close()
            except OSError:
                pass
        self.held.clear()

    def __enter__(self) -> HangServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class FreezeProxy:
    """127.0.0.1:<port> -> a real PostgreSQL; a connection freezes at its first query.

    The client's first packet (the startup message; sslmode=disable, trust auth) and the
    server's answers pass; the next client packet (the first query) is never forwarded
    and nothing flows any more: a server that froze mid-session. With
    at_first_query=False everything passes until stop_forwarding(), then nothing flows on any
    connection and the sockets stay open."""

    def __init__(self, upstream: tuple[str, int], at_first_query: bool = True) -> None:
        self.upstream = upstream
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = int(self.sock.getsockname()[1])
        self.held: list[socket.socket] = []
        self.frozen = 0
        self.at_first_query = at_first_query
        self._all_frozen = threading.Event()
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def url(self, database: str = "test") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}?sslmode=disable"

    def _serve(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.sock], [], [], 0.2)
            if not ready:
                continue
            try:
                client, _ = self.sock.accept()
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                continue
            self.held += [client, server]
            frozen = threading.Event()
            threading.Thread(
                target=self._pump,
                args=(client, server, frozen, 1 if self.at_first_query else None),
                daemon=True,
            ).start()
            threading.Thread(
                target=self._pump, args=(server, client, frozen, None), daemon=True
            ).start()

    def stop_forwarding(self) -> None:
        self._all_frozen.set()

    def _pump(
        self, src: socket.socket, dst: socket.socket, frozen: threading.Event, allow: int | None
    ) -> None:
        sent = 0
        while not self._stop.is_set() and not frozen.is_set():
            try:
                ready, _, _ = select.select([src], [], [], 0.05)
            except (OSError, ValueError):  # closed by close() meanwhile: nothing left to pump
                return
            if not ready or self._all_frozen.is_set():
                continue
            try:
                data = src.recv(65536)
                if not data:
                    return
                if allow is not None and sent >= allow:
                    frozen.set()
                    self.frozen += 1
                    return
                dst.sendall(data)
                sent += 1
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
        for c in self.held:
            try:
                c.close()
            except OSError:
                pass
