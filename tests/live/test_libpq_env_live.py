"""libpq environment variables and service files are honoured for PostgreSQL targets (SPEC §3)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def audit(url: str, env: dict[str, str]) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-m", "dbwatch", "audit", url, "--select", "PG501",
                           "--format", "json"], capture_output=True, text=True, timeout=60, env=env)
    doc: dict[str, object] = json.loads(proc.stdout)
    return doc


def test_service_file_and_environment(tmp_path: Path) -> None:
    service = tmp_path / "pg_service.conf"
    service.write_text("[dbw_test]\nhost=127.0.0.1\nport=5432\nuser=postgres\ndbname=test\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    doc = audit("postgresql://?service=dbw_test", dict(env, PGSERVICEFILE=str(service)))
    assert doc["targets"][0]["status"] == "ok"                     # type: ignore[index]
    doc = audit("postgresql://", dict(env, PGHOST="127.0.0.1", PGUSER="postgres",
                                      PGDATABASE="test", PGPORT="5432"))
    assert doc["targets"][0]["status"] == "ok"                     # type: ignore[index]
    doc = audit("postgresql://", dict(env, PGHOST="127.0.0.1", PGPORT="1", PGUSER="postgres"))
    assert doc["targets"][0]["status"] == "unreachable"            # type: ignore[index]
