"""Throwaway PostgreSQL clusters for live tests: initdb + pg_ctl on a free port under a temp
dir, as the postgres user (initdb refuses root), with settings the shared server lacks.

    with PgCluster.create({"wal_level": "logical"}) as pg:
        standby = pg.standby({"hot_standby_feedback": "on"})
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Self

BIN = Path(os.environ.get("DBWATCH_PG_BIN", "/usr/lib/postgresql/15/bin"))
OS_USER = "postgres"


def available() -> bool:
    return (BIN / "initdb").exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    cmd = ["runuser", "-u", OS_USER, "--", *args] if os.geteuid() == 0 else args
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=120, **kw)


class PgCluster:
    def __init__(self, base: Path, port: int) -> None:
        self.base = base
        self.data = base / "data"
        self.port = port
        self.running = False

    @classmethod
    def _new_base(cls) -> Path:
        base = Path(tempfile.mkdtemp(prefix="dbwatch-pg-"))
        if os.geteuid() == 0:
            shutil.chown(base, OS_USER, OS_USER)
        return base

    @classmethod
    def create(cls, settings: dict[str, Any] | None = None) -> PgCluster:
        pg = cls(cls._new_base(), free_port())
        _as_postgres([str(BIN / "initdb"), "-D", str(pg.data), "-A", "trust", "-U", "postgres",
                      "--no-sync", "-E", "UTF8", "--locale", "C"])
        pg.configure(settings or {})
        pg.start()
        return pg

    def configure(self, settings: dict[str, Any]) -> None:
        base = {"port": self.port, "listen_addresses": "'127.0.0.1'",
                "unix_socket_directories": f"'{self.base}'", "fsync": "off",
                "shared_buffers": "'16MB'", "max_connections": 40}
        lines = [f"{k} = {v}" for k, v in {**base, **settings}.items()]
        with (self.data / "postgresql.conf").open("a") as fh:
            fh.write("\n# dbwatch test cluster\n" + "\n".join(lines) + "\n")

    def start(self) -> None:
        _as_postgres([str(BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.base / "log"),
                      "-w", "-t", "60", "start"])
        self.running = True

    def stop(self, mode: str = "fast") -> None:
        if self.running:
            _as_postgres([str(BIN / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"])
            self.running = False

    def destroy(self) -> None:
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def url(self, db: str = "postgres", **params: str) -> str:
        query = "&".join(f"{k}={v}" for k, v in params.items())
        return f"postgresql://postgres@127.0.0.1:{self.port}/{db}" + (f"?{query}" if query else "")

    def psql(self, sql: str, db: str = "postgres") -> str:
        out = _as_postgres([str(BIN / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U",
                            "postgres", "-d", db, "-AtXq", "-c", sql])
        return out.stdout.strip()

    def standby(self, settings: dict[str, Any] | None = None,
                slot: str | None = None) -> PgCluster:
        """A streaming hot standby of this cluster (pg_basebackup -R), started."""
        sb = PgCluster(self._new_base(), free_port())
        args = [str(BIN / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(self.port), "-U",
                "postgres", "-D", str(sb.data), "-R", "-X", "stream", "--no-sync"]
        if slot:
            args += ["-S", slot]
        _as_postgres(args)
        sb.configure({"hot_standby": "on", **(settings or {})})
        sb.start()
        return sb

    def wait_for(self, sql: str, db: str = "postgres", timeout: float = 20.0) -> str:
        """Poll until sql returns a non-empty, non-'f' value."""
        deadline = time.time() + timeout
        while True:
            value = self.psql(sql, db)
            if value and value != "f":
                return value
            if time.time() > deadline:
                raise TimeoutError(f"{sql!r} still {value!r} after {timeout}s")
            time.sleep(0.2)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()
