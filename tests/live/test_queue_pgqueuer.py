"""pgqueuer 1.x driven by its own code (PgQueuer consumer, Queries.enqueue) on the local
PostgreSQL: healthy, backlog, exhausted retries, a consumer SIGKILLed mid-job. Exact counts."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
from queue_libs import audit, by_rule, need_py, pg_database, py_env, queue_findings

APPS = Path(__file__).with_name("queue_apps")


def _py(dsn: str, *args: str) -> None:
    subprocess.run([sys.executable, *args], cwd=APPS, env=py_env(DSN=dsn), check=True,
                   timeout=90, capture_output=True)


def _enqueue(dsn: str, entrypoint: str, n: int) -> None:
    _py(dsn, "-c", f"import asyncio, pgqueuer_app as a; asyncio.run(a.enqueue({entrypoint!r}, {n}))")


def _count(dsn: str, where: str) -> int:
    with psycopg.connect(dsn) as c:
        return int(c.execute(f"SELECT count(*) FROM pgqueuer WHERE {where}").fetchone()[0])  # type: ignore[index]


def test_pgqueuer_every_failure_mode(uniq: str) -> None:
    need_py("pgqueuer")
    db = f"dbw_pgq_{uniq}"
    with pg_database(db) as dsn:
        url = f"postgresql://postgres@127.0.0.1:5432/{db}"
        subprocess.run([sys.executable, "-m", "pgqueuer", "install"], cwd=APPS, timeout=60,
                       env=py_env(PGHOST="127.0.0.1", PGUSER="postgres", PGDATABASE=db),
                       check=True, capture_output=True)
        _enqueue(dsn, "ok", 5)
        _py(dsn, "pgqueuer_app.py", "drain")
        assert _count(dsn, "true") == 0
        assert queue_findings(audit(url, "--select", "QU,DW")) == []
        # exhausted retries: 4 jobs, each tried twice, then terminal
        _enqueue(dsn, "boom", 4)
        _py(dsn, "pgqueuer_app.py", "drain")
        # backlog: 500 jobs; what an hour of waiting looks like
        _enqueue(dsn, "ok_later", 500)
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("UPDATE pgqueuer SET created = created - interval '1 hour', "
                      "execute_after = execute_after - interval '1 hour'")
        # a consumer killed mid-job
        _enqueue(dsn, "slow", 3)
        consumer = subprocess.Popen([sys.executable, "pgqueuer_app.py", "continuous"], cwd=APPS,
                                    env=py_env(DSN=dsn), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while _count(dsn, "status = 'picked'") < 3 and time.time() < deadline:
            time.sleep(0.2)
        consumer.send_signal(signal.SIGKILL)
        consumer.wait(10)
        assert _count(dsn, "status = 'picked'") == 3
        with psycopg.connect(dsn, autocommit=True) as c:  # 5 minutes without a heartbeat
            c.execute("UPDATE pgqueuer SET heartbeat = heartbeat - interval '5 min' "
                      "WHERE status = 'picked'")
        data = audit(url, "--select", "QU,DW")
    qu = queue_findings(data)
    assert qu and all(f["evidence"]["library"] == "pgqueuer" for f in qu)
    (backlog,) = by_rule(data, "QU001")
    assert backlog["evidence"]["queue"] == "ok_later" and backlog["evidence"]["depth"] == 500
    (stale,) = by_rule(data, "QU002")
    assert stale["evidence"]["count"] == 3 and stale["evidence"]["queues"] == {"slow": 3}
    assert "heartbeat" in stale["summary"]
    (failed,) = by_rule(data, "QU004")
    assert failed["evidence"]["count"] == 4 and failed["evidence"]["exception"] == "RuntimeError"
    assert failed["evidence"]["table"] == "public.pgqueuer_log" and "pgqueuer_log" in failed["fix"]
    assert not by_rule(data, "DW001")
