"""Shared bits of the Python drivers in this folder: the cell's database from the environment,
polling, and a worker subprocess that is SIGKILLed once it holds its jobs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

ENGINE = os.environ.get("DB_ENGINE", "postgresql")  # postgresql | mariadb
DB = os.environ.get("DB_NAME", "")


def pg_dsn() -> str:
    return f"host=127.0.0.1 port=5432 user=postgres dbname={DB}"


def wait_for(what: str, cond: Callable[[], bool], timeout: float = 90.0) -> None:
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.1)


def kill_when(argv: list[str], held: Callable[[], bool], what: str) -> None:
    """Start a worker (argv), wait until `held()` says it claimed its jobs, SIGKILL it."""
    worker = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=dict(os.environ), start_new_session=True)
    try:
        wait_for(what, held)
    finally:  # the whole group: a worker that forked children loses them too
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(10)


def me() -> list[str]:
    return [sys.executable, sys.argv[0]]
