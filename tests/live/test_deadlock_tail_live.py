"""A deadlock storm on a throwaway MariaDB with its own error log: the daemon tails it, is
SIGKILLed and restarted mid-storm, the log is rotated (rename + FLUSH ERROR LOGS) — and the
deadlocks recorded equal the server's Innodb_deadlocks delta."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pymysql = pytest.importorskip("pymysql")
sys.path.insert(0, str(Path(__file__).parent))
import mariadb_instance  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not mariadb_instance.available(), reason="no mariadbd here")


def deadlocks(db: Any) -> int:
    return int(db.query("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")[0][1])


def storm(db: Any, stop: threading.Event, pairs: int = 3) -> None:
    def worker(first: int, second: int) -> None:
        conn = db.connect(autocommit=False)
        cur = conn.cursor()
        while not stop.is_set():
            try:
                cur.execute("UPDATE storm SET v = v + 1 WHERE id = %s", (first,))
                time.sleep(0.002)
                cur.execute("UPDATE storm SET v = v + 1 WHERE id = %s", (second,))
                conn.commit()
            except pymysql.err.OperationalError:
                conn.rollback()
        conn.close()

    threads = []
    for p in range(pairs):
        a, b = 2 * p + 1, 2 * p + 2
        threads += [threading.Thread(target=worker, args=(a, b)),
                    threading.Thread(target=worker, args=(b, a))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def start_daemon(cfg: Path, state: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "dbwatch", "watch", "--config", str(cfg),
                             "--state", str(state)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_position(state: Path, timeout: float = 30.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if state.exists():
            try:
                with sqlite3.connect(state) as c:
                    if c.execute("SELECT 1 FROM meta WHERE key LIKE 'deadlock-log:%'").fetchone():
                        return
            except sqlite3.Error:
                pass
        time.sleep(0.2)
    raise TimeoutError("the daemon never read the log")


def recorded(state: Path) -> int:
    with sqlite3.connect(state) as c:
        return int(c.execute("SELECT count(*) FROM deadlocks WHERE target = 'storm'")
                   .fetchone()[0])


def test_storm_kill_restart_rotate(tmp_path: Path) -> None:
    with mariadb_instance.MariaDbInstance.create(["--innodb-print-all-deadlocks=ON"]) as db:
        db.query("CREATE TABLE storm (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
        db.query("INSERT INTO storm VALUES (1,0),(2,0),(3,0),(4,0),(5,0),(6,0)")
        log = db.base / "error.log"
        cfg = tmp_path / "dbwatch.toml"
        cfg.write_text(f'[[targets]]\nname = "storm"\nurl = "{db.url()}"\ninterval = "1s"\n'
                       f'log_file = "{log}"\n')
        state = tmp_path / "state.db"
        daemon = start_daemon(cfg, state)
        try:
            wait_position(state)
            before = deadlocks(db)
            stop = threading.Event()
            t = threading.Thread(target=storm, args=(db, stop))
            t.start()
            time.sleep(2.5)
            daemon.send_signal(signal.SIGKILL)  # mid-storm, mid-cycle perhaps
            daemon.wait(10)
            time.sleep(1.0)
            daemon = start_daemon(cfg, state)
            time.sleep(1.5)
            log.rename(db.base / "error.log.1")  # logrotate's rename, then reopen
            db.query("FLUSH ERROR LOGS")
            time.sleep(2.0)
            stop.set()
            t.join()
            after = deadlocks(db)
            time.sleep(3.5)  # a few cycles to catch up
        finally:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(30)
            except subprocess.TimeoutExpired:
                daemon.kill()
        delta = after - before
        assert delta >= 20, f"the storm made only {delta} deadlocks"
        print(f"storm: Innodb_deadlocks delta {delta}, recorded {recorded(state)}")
        assert recorded(state) == delta
