"""MySQL/MariaDB connect/read timeouts are 5 s as documented: a server that accepts the TCP
connection and never answers costs one target ~5 s, reported as unreachable, never 30 s."""
from __future__ import annotations

import socket
import subprocess
import sys
import time

from dbwatch.targets import CONNECT_TIMEOUT_S, IO_TIMEOUT_S


def test_documented_timeouts() -> None:
    assert CONNECT_TIMEOUT_S == 5 and IO_TIMEOUT_S == 5


def test_silent_mysql_server_times_out_in_about_5s() -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    try:
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "dbwatch", "audit",
                               f"mysql://u:Quiet9Pass@127.0.0.1:{port}/x"],
                              capture_output=True, text=True, timeout=60)
        took = time.monotonic() - started
    finally:
        srv.close()
    assert proc.returncode == 3 and "Quiet9" not in proc.stdout + proc.stderr
    assert 4.5 <= took < 15, took
