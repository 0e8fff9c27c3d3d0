"""A target scoped to schema nc_app never records, lists, logs or alerts on a deadlock that
touched only another schema (issue 24.3): a real deadlock in nc_other on a throwaway MariaDB
(its own error log, innodb_print_all_deadlocks=ON), one `watch --once` with a scoped target
(status text + log tail) and an unscoped one beside it, then `history`, `deadlocks
--history --config` and the dashboard's /deadlocks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pymysql = pytest.importorskip("pymysql")
sys.path.insert(0, str(Path(__file__).parent))
import mariadb_instance  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not mariadb_instance.available(), reason="no mariadbd here")


def dbwatch(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "dbwatch", *args], capture_output=True,
                          text=True, timeout=90, env=env, cwd=ROOT)


def deadlock_in(db: Any, schema: str) -> None:
    """Two transactions updating two rows in opposite order: InnoDB rolls one back."""
    db.query(f"CREATE TABLE {schema}.acct (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
    db.query(f"INSERT INTO {schema}.acct VALUES (1, 0), (2, 0)")
    a, b = db.connect(autocommit=False), db.connect(autocommit=False)
    ca, cb = a.cursor(), b.cursor()
    ca.execute(f"UPDATE {schema}.acct SET v = 1 WHERE id = 1")
    cb.execute(f"UPDATE {schema}.acct SET v = 1 WHERE id = 2")
    errors: list[Exception] = []

    def second() -> None:
        try:
            cb.execute(f"UPDATE {schema}.acct SET v = 2 WHERE id = 1")
        except pymysql.err.OperationalError as exc:
            errors.append(exc)

    t = threading.Thread(target=second)
    t.start()
    time.sleep(0.3)  # b waits on row 1 before a asks for row 2
    try:
        ca.execute(f"UPDATE {schema}.acct SET v = 2 WHERE id = 2")
    except pymysql.err.OperationalError as exc:
        errors.append(exc)
    t.join(10)
    a.rollback()
    b.rollback()
    a.close()
    b.close()
    assert errors and errors[0].args[0] == 1213, errors  # ER_LOCK_DEADLOCK


@pytest.fixture(scope="module")
def server() -> Iterator[mariadb_instance.MariaDbInstance]:
    with mariadb_instance.MariaDbInstance.create(["--innodb-print-all-deadlocks=ON"]) as db:
        db.query("CREATE DATABASE nc_app")
        db.query("CREATE DATABASE nc_other")
        deadlock_in(db, "nc_other")
        yield db


def test_scoped_daemon_keeps_another_schemas_deadlock_out(
        server: mariadb_instance.MariaDbInstance, tmp_path: Path) -> None:
    log = server.base / "error.log"
    cfg = tmp_path / "dbwatch.toml"
    state = tmp_path / "state.db"
    cfg.write_text(
        f'[daemon]\nstate = "{state}"\n'
        f'[[targets]]\nname = "scoped"\nurl = "{server.url("nc_app")}"\nlog_file = "{log}"\n'
        f'[[targets]]\nname = "wide"\nurl = "{server.url("nc_app")}"\nall_databases = true\n')
    once = dbwatch("watch", "--once", "--config", str(cfg), "--flush-timeout", "1")
    assert once.returncode in (0, 1, 2, 3), once.stderr
    # the unscoped target beside it did record the deadlock: the check is not vacuous
    wide = dbwatch("deadlocks", "--history", "--config", str(cfg), "--format", "json")
    assert wide.returncode == 0, wide.stderr
    recs = json.loads(wide.stdout)["deadlocks"]
    assert {r["target"] for r in recs} == {"wide"}, recs
    # the log line: a deadlock recorded for "wide" only; nothing logged for "scoped"
    assert "new deadlock on wide" in once.stderr
    assert "scoped" not in "".join(
        ln for ln in once.stderr.splitlines() if "deadlock" in ln.lower()), once.stderr
    # no MY102 firing (an alert would follow it) for the scoped target
    status = dbwatch("status", "--config", str(cfg), "--format", "json")
    firing = json.loads(status.stdout)["firing"]
    assert not [f for f in firing if f["target"] == "scoped" and f["rule"] == "MY102"], firing
    # `history` and the dashboard's /deadlocks read the same journal
    hist = dbwatch("history", "--config", str(cfg), "--target", "scoped", "--format", "json")
    assert json.loads(hist.stdout)["deadlocks"]["total"] == 0, hist.stdout
    from dbwatch.statereader import StateReader
    reader = StateReader(state)
    assert reader.deadlocks(target="scoped").total == 0
    assert reader.deadlocks(target="wide").total == 1
