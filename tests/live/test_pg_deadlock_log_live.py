"""Real PostgreSQL deadlocks logged by a throwaway cluster in stderr, csvlog and jsonlog: read
by `dbwatch deadlocks --log`, same shape, diagnosed (a claim against a batch completion)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")
sys.path.insert(0, str(Path(__file__).parent))
import pgcluster  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not pgcluster.available(), reason="no PostgreSQL binaries")


def make_deadlock(url: str) -> None:
    """A claim (`FOR UPDATE` without SKIP LOCKED) against a batch completion, opposite order."""
    a = psycopg.connect(url)
    b = psycopg.connect(url)
    try:
        b.execute("UPDATE jobs SET state = 'done' WHERE id IN (2)")
        a.execute("SELECT * FROM jobs WHERE queue = 'default' AND state = 'ready' "
                  "ORDER BY id LIMIT 1 FOR UPDATE")  # locks row 1
        err: list[BaseException] = []

        def claim_more() -> None:
            try:
                a.execute("SELECT * FROM jobs WHERE queue = 'default' AND state = 'ready' "
                          "ORDER BY id LIMIT 2 FOR UPDATE")  # needs row 2 as well
            except psycopg.errors.DeadlockDetected as exc:
                err.append(exc)

        t = threading.Thread(target=claim_more)
        t.start()
        time.sleep(0.3)
        try:
            b.execute("UPDATE jobs SET state = 'done' WHERE id IN (1)")
        except psycopg.errors.DeadlockDetected as exc:
            err.append(exc)
        t.join(10)
        assert err, "no deadlock happened"
    finally:
        a.rollback()
        b.rollback()
        a.close()
        b.close()


def test_stderr_csvlog_jsonlog(tmp_path: Path) -> None:
    settings = {"logging_collector": "on", "log_destination": "'stderr,csvlog,jsonlog'",
                "log_directory": "'pglog'", "log_filename": "'pg'",
                "log_line_prefix": "'%m [%p] %q%u@%d '", "deadlock_timeout": "'100ms'"}
    with pgcluster.PgCluster.create(settings) as pg:
        pg.psql("CREATE TABLE jobs (id int PRIMARY KEY, queue text, state text)")
        pg.psql("INSERT INTO jobs VALUES (1, 'default', 'ready'), (2, 'default', 'ready')")
        for _ in range(2):
            make_deadlock(pg.url())
        time.sleep(1.0)
        logdir = pg.data / "pglog"
        files = {"stderr": logdir / "pg", "csvlog": logdir / "pg.csv", "jsonlog": logdir / "pg.json"}
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        seen = {}
        for kind, path in files.items():
            r = subprocess.run([sys.executable, "-m", "dbwatch", "deadlocks", "--log", str(path),
                                "--format", "json"], capture_output=True, text=True, env=env,
                               timeout=60)
            assert r.returncode == 0, (kind, r.stderr)
            dls = json.loads(r.stdout)["deadlocks"]
            assert len(dls) == 2, (kind, dls)
            for dl in dls:
                assert len(dl["transactions"]) == 2
                assert sum(t["victim"] for t in dl["transactions"]) == 1
                assert all(t["query"] for t in dl["transactions"])
                assert all(lk["waiting"] and lk["mode"] for lk in dl["locks"])
                assert dl["diagnosis"]["pattern"] == "queue-claim-vs-delete", dl["diagnosis"]
            seen[kind] = [[t["thread_id"] for t in d["transactions"]] for d in dls]
        assert seen["stderr"] == seen["csvlog"] == seen["jsonlog"]
        r = subprocess.run([sys.executable, "-m", "dbwatch", "deadlocks", "--log",
                            str(files["csvlog"]), "--summary", "--format", "json"],
                           capture_output=True, text=True, env=env, timeout=60)
        s = json.loads(r.stdout)["summary"]
        assert s["deadlocks"] == 2 and s["by_pattern"] == {"queue-claim-vs-delete": 2}
