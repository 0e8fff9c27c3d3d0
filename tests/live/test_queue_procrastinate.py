"""procrastinate 3.x driven by its own code (CLI worker, task.defer) on the local PostgreSQL:
healthy, backlog, exhausted retries, a worker SIGKILLed mid-job and a lock held by it. Counts
are exact; fixes speak procrastinate."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from queue_libs import audit, by_rule, need_py, pg_database, py_env, queue_findings

APPS = Path(__file__).with_name("queue_apps")
TABLE = "public.procrastinate_jobs"


def _py(dsn: str, code: str) -> None:
    subprocess.run([sys.executable, "-c", code], cwd=APPS, env=py_env(DSN=dsn), check=True,
                   timeout=60)


def _cli(dsn: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "procrastinate", "--app=procrastinate_app.app",
                           *args], cwd=APPS, env=py_env(DSN=dsn), check=True, timeout=60,
                          capture_output=True, text=True)


def _count(dsn: str, where: str) -> int:
    with psycopg.connect(dsn) as c:
        return int(c.execute(f"SELECT count(*) FROM procrastinate_jobs WHERE {where}")
                   .fetchone()[0])  # type: ignore[index]


def test_procrastinate_every_failure_mode(uniq: str) -> None:
    need_py("procrastinate")
    with pg_database(f"dbw_procr_{uniq}") as dsn:
        url = f"postgresql://postgres@127.0.0.1:5432/dbw_procr_{uniq}"
        _cli(dsn, "schema", "--apply")
        # healthy: jobs run and succeed; the succeeded rows stay in the table
        _py(dsn, "from procrastinate_app import app, ok\nwith app.open():\n"
                 "    [ok.defer() for _ in range(5)]")
        _cli(dsn, "worker", "--one-shot", "-q", "default")
        assert _count(dsn, "status = 'succeeded'") == 5
        assert queue_findings(audit(url), TABLE) == []
        # exhausted retries: 20 jobs that always raise, max_attempts=2
        _py(dsn, "from procrastinate_app import app, boom\nwith app.open():\n"
                 "    [boom.defer() for _ in range(20)]")
        _cli(dsn, "worker", "--one-shot", "-q", "default")
        assert _count(dsn, "status = 'failed'") == 20
        # backlog: 500 jobs due an hour ago, no worker on their queue
        _py(dsn, "import datetime as d\nfrom procrastinate_app import app, ok\n"
                 "t = d.datetime.now(d.timezone.utc) - d.timedelta(hours=1)\n"
                 "with app.open():\n    [ok.configure(schedule_at=t).defer() for _ in range(500)]")
        # a worker killed mid-job: 3 plain jobs and one holding lock L; a 5th job waits on L
        _py(dsn, "from procrastinate_app import app, slow\nwith app.open():\n"
                 "    [slow.defer() for _ in range(3)]\n    slow.configure(lock='L').defer()")
        worker = subprocess.Popen([sys.executable, "-m", "procrastinate",
                                   "--app=procrastinate_app.app", "worker", "-q", "slow",
                                   "-c", "4"], cwd=APPS, env=py_env(DSN=dsn),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while _count(dsn, "status = 'doing'") < 4 and time.time() < deadline:
            time.sleep(0.2)
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        assert _count(dsn, "status = 'doing'") == 4
        _py(dsn, "from procrastinate_app import app, slow\nwith app.open():\n"
                 "    slow.configure(lock='L').defer()")
        # what 5 minutes without a heartbeat look like (stalled_worker_timeout is 30 s)
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("UPDATE procrastinate_workers SET last_heartbeat = now() - interval '5 min'")
        data = audit(url)
        # a worker starting later prunes the dead one (procrastinate's own
        # prune_stalled_workers: its row deleted, the jobs' worker_id set NULL): stalled
        # since then, with no heartbeat left to age
        _py(dsn, "import asyncio\nfrom procrastinate_app import app\nasync def main():\n"
                 "    async with app.open_async():\n"
                 "        assert await app.job_manager.prune_stalled_workers(60)\n"
                 "asyncio.run(main())")
        assert _count(dsn, "status = 'doing' AND worker_id IS NULL") == 4
        pruned = audit(url)
    (gone,) = by_rule(pruned, "QU002")
    assert gone["evidence"]["count"] == 4 and gone["evidence"]["worker_gone"] == 4
    assert gone["summary"] == (
        f"{TABLE}: 4 'doing' jobs whose worker row was pruned (worker_id set NULL); "
        "procrastinate never runs stalled jobs again unless they are retried"), gone["summary"]
    qu = queue_findings(data, TABLE)
    assert all(f["evidence"]["library"] == "procrastinate" for f in qu) and qu
    (backlog,) = by_rule(data, "QU001")
    assert backlog["evidence"]["queue"] == "default" and backlog["evidence"]["depth"] == 500
    assert backlog["severity"] == "critical" and "procrastinate" in backlog["fix"]
    (stalled,) = by_rule(data, "QU002")
    assert stalled["evidence"]["count"] == 4 and stalled["evidence"]["queues"] == {"slow": 4}
    assert stalled["evidence"]["worker_gone"] == 0
    assert "no heartbeat for over 30s (oldest 5m" in stalled["summary"], stalled["summary"]
    assert "get_stalled_jobs" in stalled["fix"] and "artisan" not in stalled["fix"]
    (failed,) = by_rule(data, "QU004")
    assert failed["evidence"]["count"] == 20 and failed["evidence"]["job_class"] == "boom"
    assert "retry" in failed["fix"] and "procrastinate" in failed["fix"]
    assert not by_rule(data, "DW001") and not by_rule(data, "QU003")
