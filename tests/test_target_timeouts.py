"""MySQL/MariaDB connect/read timeouts are 5 s as documented: a server that accepts the TCP
connection and never answers costs one target ~5 s, reported as unreachable, never 30 s."""
from __future__ import annotations

import socket
import time

import pytest

from dbwatch.errors import TargetError
from dbwatch.targets import CONNECT_TIMEOUT_S, IO_TIMEOUT_S, open_target, spec_for


def test_documented_timeouts() -> None:
    assert CONNECT_TIMEOUT_S == 5 and IO_TIMEOUT_S == 5


def test_silent_mysql_server_times_out_in_about_5s() -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    try:
        started = time.monotonic()
        with pytest.raises(TargetError) as err:
            open_target(spec_for(f"mysql://u:Quiet9Pass@127.0.0.1:{port}/x"))
        took = time.monotonic() - started
    finally:
        srv.close()
    assert "timed out" in str(err.value) and "Quiet9" not in str(err.value)
    assert 4.5 <= took < 12, took
