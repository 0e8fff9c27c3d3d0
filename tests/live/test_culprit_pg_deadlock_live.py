"""A real PostgreSQL deadlock between a tagged job and an untagged session, logged by a
throwaway cluster: `dbwatch deadlocks --log` names the tagged process's origin from the
statement the server logged, and nothing for the other (issue 23)."""
from __future__ import annotations

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
from schemas import load_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not pgcluster.available(), reason="no PostgreSQL binaries")
TAG = "/*application:Shop,job:ReindexCatalog*/"


def _deadlock(url: str) -> None:
    job, other = psycopg.connect(url), psycopg.connect(url)
    err: list[BaseException] = []
    try:
        job.execute(f"UPDATE items SET v = v + 1 WHERE id = 1 {TAG}")
        other.execute("UPDATE items SET v = v + 1 WHERE id = 2")

        def second() -> None:
            try:
                other.execute("UPDATE items SET v = v + 1 WHERE id = 1")
            except psycopg.errors.DeadlockDetected as exc:
                err.append(exc)

        t = threading.Thread(target=second)
        t.start()
        time.sleep(0.3)
        try:
            job.execute(f"UPDATE items SET v = v + 1 WHERE id = 2 {TAG}")
        except psycopg.errors.DeadlockDetected as exc:
            err.append(exc)
        t.join(10)
        assert err, "no deadlock happened"
    finally:
        for c in (job, other):
            c.rollback()
            c.close()


def test_pg_deadlock_log_names_the_tagged_process() -> None:
    settings = {"logging_collector": "on", "log_destination": "'stderr'",
                "log_directory": "'pglog'", "log_filename": "'pg'",
                "log_line_prefix": "'%m [%p] %q%u@%d '", "deadlock_timeout": "'100ms'"}
    with pgcluster.PgCluster.create(settings) as pg:
        pg.psql("CREATE TABLE items (id int PRIMARY KEY, v int)")
        pg.psql("INSERT INTO items VALUES (1, 0), (2, 0)")
        _deadlock(pg.url())
        time.sleep(1.0)
        r = subprocess.run([sys.executable, "-m", "dbwatch", "deadlocks", "--log",
                            str(pg.data / "pglog" / "pg"), "--format", "json"],
                           capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert r.returncode == 0, r.stderr
        (dl,) = load_json(r.stdout, "deadlocks")["deadlocks"]  # valid against its schema
        origins = sorted((t["origin"].get("phrase") or "") for t in dl["transactions"])
        assert origins == ["", "Shop, job ReindexCatalog"], dl["transactions"]
        tagged = next(t for t in dl["transactions"] if t["origin"])
        assert tagged["origin"]["job"] == "ReindexCatalog" and tagged["origin"]["source"] == "marginalia"
