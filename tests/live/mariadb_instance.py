"""Throwaway MariaDB servers for live tests: mariadb-install-db + mariadbd on a free port under a
temp dir, with options the shared server lacks (performance_schema needs a restart).

    with MariaDbInstance.create(["--performance-schema=ON"]) as db:
        conn = db.connect()            # PyMySQL, database `test`
        db.url()                       # mysql://root@127.0.0.1:<port>/test
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Self

INSTALL_DB = shutil.which("mariadb-install-db") or "/usr/bin/mariadb-install-db"
MARIADBD = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
# Small and fast: a test server needs neither durability nor a big buffer pool.
BASE_OPTIONS = ["--innodb-flush-method=nosync", "--innodb-doublewrite=0",
                "--innodb-buffer-pool-size=16M", "--innodb-log-file-size=8M"]
PFS_OPTIONS = ["--performance-schema=ON",
               "--performance-schema-consumer-events-statements-current=ON",
               "--performance-schema-consumer-events-statements-history=ON",
               "--performance-schema-consumer-events-statements-history-long=ON"]


def available() -> bool:
    return Path(INSTALL_DB).exists() and Path(MARIADBD).exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _user() -> list[str]:
    return ["--user=root"] if os.geteuid() == 0 else []


class MariaDbInstance:
    def __init__(self, base: Path, port: int) -> None:
        self.base = base
        self.data = base / "data"
        self.port = port
        self.socket = base / "mysqld.sock"
        self.proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def create(cls, options: list[str] | None = None, timeout: float = 60.0) -> MariaDbInstance:
        """Install a datadir, start the server, create the `test` database."""
        db = cls(Path(tempfile.mkdtemp(prefix="dbwatch-mariadb-")), free_port())
        try:
            # its own tmpdir: the bootstrap's #sql-temptable-<pid>-… files in a /tmp shared
            # with other instances made one install fail (parallel test workers)
            (db.base / "tmp").mkdir()
            subprocess.run([INSTALL_DB, "--no-defaults", f"--datadir={db.data}",
                            f"--tmpdir={db.base / 'tmp'}",
                            "--auth-root-authentication-method=normal", "--skip-test-db",
                            "--skip-name-resolve", *_user(), *BASE_OPTIONS],
                           check=True, capture_output=True, timeout=120)
            db.start(options or [], timeout)
            with db.connect(database=None) as conn, conn.cursor() as cur:
                cur.execute("CREATE DATABASE IF NOT EXISTS test")
        except BaseException:
            db.destroy()
            raise
        return db

    def start(self, options: list[str], timeout: float = 60.0) -> None:
        args = [MARIADBD, "--no-defaults", f"--datadir={self.data}", f"--port={self.port}",
                f"--socket={self.socket}", "--bind-address=127.0.0.1",
                f"--tmpdir={self.base / 'tmp'}",
                f"--pid-file={self.base / 'mysqld.pid'}", f"--log-error={self.base / 'error.log'}",
                "--skip-log-bin", *_user(), *BASE_OPTIONS, *options]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + timeout
        while True:
            try:
                self.connect(database=None).close()
                return
            except Exception:   # noqa: BLE001 - not accepting connections yet
                if self.proc.poll() is not None or time.time() > deadline:
                    log = (self.base / "error.log").read_text(errors="replace")[-2000:] \
                        if (self.base / "error.log").exists() else ""
                    self.stop()
                    raise RuntimeError(f"mariadbd did not start on port {self.port}:\n{log}") \
                        from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def destroy(self) -> None:
        try:
            self.stop()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def url(self, db: str = "test") -> str:
        return f"mysql://root@127.0.0.1:{self.port}/{db}"

    def connect(self, database: str | None = "test", **kw: Any) -> Any:
        import pymysql
        kw.setdefault("autocommit", True)
        return pymysql.connect(host="127.0.0.1", port=self.port, user="root", password="",
                               database=database, connect_timeout=2, **kw)

    def query(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.connect() as conn, conn.cursor() as cur:
            cur.execute(sql, params)
            return list(cur.fetchall())

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()
