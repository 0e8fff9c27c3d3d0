"""Shut a connection's socket down under a thread blocked in it (the daemon's deadline).

shutdown() acts on the socket itself, so the driver's pending read returns at once with an
error (psycopg: "server closed the connection"; PyMySQL: "Lost connection"), whatever the
driver is waiting for. Closing is left to the thread that owns the connection.
"""

from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger(__name__)


def _fd(conn: object) -> int | None:
    raw: object = getattr(conn, "conn", None)  # the driver's connection
    pgconn: object = getattr(raw, "pgconn", None)  # psycopg (not imported for MySQL targets)
    if pgconn is not None:
        try:
            fd: object = getattr(pgconn, "socket", None)
        except Exception as exc:  # noqa: BLE001 -- psycopg.OperationalError when closed; never raise
            log.debug("no socket: %s", exc)
            return None
        return fd if isinstance(fd, int) else None
    sock: object = getattr(raw, "_sock", None)  # PyMySQL
    if isinstance(sock, socket.socket):
        try:
            return sock.fileno()
        except OSError:
            return None
    return None


def abort(conn: object) -> bool:
    """True if a socket was shut down; never raises."""
    fd = _fd(conn)
    if fd is None or fd < 0:
        return False
    try:
        dup = os.dup(fd)
    except OSError:
        return False
    try:
        with socket.socket(fileno=dup) as s:
            s.shutdown(socket.SHUT_RDWR)
        return True
    except OSError as exc:
        log.debug("shutting down a connection failed: %s", exc)
        return False
