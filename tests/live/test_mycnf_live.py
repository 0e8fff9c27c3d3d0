"""~/.my.cnf is honoured for what the URL leaves out (SPEC §3)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pymysql


def test_my_cnf_supplies_user_and_password(my_admin: pymysql.connections.Connection, uniq: str,
                                           tmp_path: Path) -> None:
    user, pw = f"dbw_cnf_{uniq}", f"pw{uniq}"
    cur = my_admin.cursor()
    cur.execute(f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY '{pw}'")
    cur.execute(f"GRANT PROCESS ON *.* TO '{user}'@'127.0.0.1'")
    (tmp_path / ".my.cnf").write_text(f"[client]\nuser={user}\npassword={pw}\nhost=127.0.0.1\n")
    env = dict(os.environ, HOME=str(tmp_path))
    try:
        proc = subprocess.run([sys.executable, "-m", "dbwatch", "audit", "mysql://",
                               "--select", "MY001", "--format", "json"],
                              capture_output=True, text=True, timeout=60, env=env)
        doc = json.loads(proc.stdout)
        assert doc["targets"][0]["status"] == "ok", proc.stderr
        assert pw not in proc.stdout + proc.stderr
        (tmp_path / ".my.cnf").write_text(f"[client]\nuser={user}\npassword=wrong{uniq}\n")
        bad = subprocess.run([sys.executable, "-m", "dbwatch", "audit", "mysql://",
                              "--select", "MY001"], capture_output=True, text=True, timeout=60,
                             env=env)
        assert bad.returncode == 3 and f"Access denied for user '{user}'" in bad.stderr
        assert f"wrong{uniq}" not in bad.stderr + bad.stdout
    finally:
        cur.execute(f"DROP USER '{user}'@'127.0.0.1'")
