"""A monitor role without pg_monitor must not produce a silent OK: DW001 names the grant."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg


def audit(url: str, cfg: Path) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "dbwatch", "audit", url, "--config", str(cfg),
                           "--select", "PG002,DW", "--format", "json"],
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, json.loads(proc.stdout)


def test_missing_pg_monitor_is_reported(pg_admin: Any, uniq: str, tmp_path: Path) -> None:
    role = f"dbw_mon_{uniq}"
    pg_admin.execute(f"CREATE ROLE {role} LOGIN")
    idle = psycopg.connect("postgresql://postgres@127.0.0.1/test", application_name="idler")
    cfg = tmp_path / "c.toml"
    cfg.write_text('[rules.PG002]\nthresholds = { warning = "1s" }\n')
    try:
        idle.execute("SELECT txid_current()")
        time.sleep(1.5)
        url = f"postgresql://{role}@127.0.0.1/test"
        code, doc = audit(url, cfg)
        dw = [f for f in doc["findings"] if f["rule"] == "DW001"]
        assert code == 3 and any("GRANT pg_monitor" in f["fix"] for f in dw), dw
        assert not [f for f in doc["findings"] if f["rule"] == "PG002"]   # it cannot see them
        pg_admin.execute(f"GRANT pg_monitor TO {role}")
        code, doc = audit(url, cfg)
        pids = {f["evidence"]["pid"] for f in doc["findings"] if f["rule"] == "PG002"}
        assert idle.info.backend_pid in pids
        # (the shared database may hold other tests' queue tables this role cannot read)
        assert not [f for f in doc["findings"] if f["rule"] == "DW001" and "pg_monitor" in f["fix"]]
    finally:
        idle.close()
        pg_admin.execute(f"DROP ROLE {role}")
