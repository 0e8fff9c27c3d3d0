"""A throwaway PostgreSQL cluster on a free port (initdb + pg_ctl as the postgres user)."""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time


def pg_bin() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL server binaries not found under /usr/lib/postgresql")
    return os.path.dirname(found[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgCluster:
    """`with PgCluster(settings={...}) as c: c.url` — removed on exit."""

    def __init__(self, settings: dict[str, str] | None = None) -> None:
        self.settings = settings or {}
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="dbw_pg_")
        self.data = os.path.join(self.dir, "data")
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _as_postgres(self, *cmd: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run(prefix + list(cmd), check=True, capture_output=True, timeout=120)

    def __enter__(self) -> PgCluster:
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        b = pg_bin()
        self._as_postgres(f"{b}/initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8")
        with open(os.path.join(self.data, "postgresql.conf"), "a") as fh:
            fh.write(f"port = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                     f"unix_socket_directories = '{self.dir}'\n")
            fh.writelines(f"{k} = {v}\n" for k, v in self.settings.items())
        self._as_postgres(f"{b}/pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "log"),
                          "-w", "start")
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._as_postgres(f"{pg_bin()}/pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
            time.sleep(0.1)
