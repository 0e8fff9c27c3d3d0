"""graphile-worker 0.16+ driven by its own API (runMigrations, addJob, runOnce, run) on the local
PostgreSQL: healthy, backlog, exhausted retries, a worker SIGKILLed mid-job holding job locks
and a named-queue lock (its own finding, not a backlog)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import psycopg
from queue_libs import audit, by_rule, need_node, node_env, pg_database, queue_findings

APPS = Path(__file__).with_name("queue_apps")
TABLE = "graphile_worker._private_jobs"


def _node(env: dict[str, str], *args: str) -> None:
    subprocess.run(["node", "graphile.js", *args], cwd=APPS, env=env, check=True, timeout=90,
                   capture_output=True)


def _locked(dsn: str) -> int:
    with psycopg.connect(dsn) as c:
        return int(c.execute("SELECT count(*) FROM graphile_worker._private_jobs "
                             "WHERE locked_at IS NOT NULL").fetchone()[0])  # type: ignore[index]


def test_graphile_worker_every_failure_mode(uniq: str, tmp_path: Path) -> None:
    need_node("graphile-worker")
    db = f"dbw_gw_{uniq}"
    with pg_database(db) as dsn:
        url = f"postgresql://postgres@127.0.0.1:5432/{db}"
        env = node_env(PG_URL=url)
        _node(env, "setup")
        _node(env, "add", "ok", "5")
        _node(env, "drain")
        assert queue_findings(audit(url, "--select", "QU,DW")) == []
        _node(env, "add", "boom", "4")  # maxAttempts 2
        _node(env, "drain")
        _node(env, "add", "slow", "3")
        _node(env, "add", "slow", "5", "serial")  # one runs and locks 'serial'; 4 wait
        worker = subprocess.Popen(["node", "graphile.js", "hang"], cwd=APPS, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while _locked(dsn) < 4 and time.time() < deadline:
            time.sleep(0.2)
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        _node(env, "add-overdue", "ok", "500", "mail")  # due an hour ago, no worker left
        with psycopg.connect(dsn, autocommit=True) as c:
            worker_id = c.execute("SELECT locked_by FROM graphile_worker._private_job_queues "
                                  "WHERE queue_name = 'serial'").fetchone()[0]  # type: ignore[index]
            # 40 s after the kill, with a 30 s backlog threshold: the lock is too young for its
            # own finding (5 min), so the 4 jobs behind it are a backlog now, not silence
            for table, col in (("_private_jobs", "run_at"), ("_private_jobs", "locked_at"),
                               ("_private_job_queues", "locked_at")):
                c.execute(f"UPDATE graphile_worker.{table} SET {col} = {col} - interval '40 s'"
                          f" WHERE {col} > now() - interval '1 min'")
        cfg = tmp_path / "dbwatch.toml"
        cfg.write_text(f'[[targets]]\nname = "gw"\nurl = "{url}"\n'
                       '[rules.QU001]\nthresholds = { warning = "30s", critical = "30m" }\n')
        early = audit("gw", "--config", str(cfg), "--select", "QU,DW")
        serial = [f for f in by_rule(early, "QU001") if f["evidence"]["queue"] == "serial"]
        assert len(serial) == 1 and serial[0]["evidence"]["depth"] == 4
        assert serial[0]["evidence"]["behind_lock"]["worker"] == worker_id
        assert not [f for f in by_rule(early, "QU002") if f["subject"].startswith("queue lock")]
        with psycopg.connect(dsn, autocommit=True) as c:
            # ten minutes after the kill
            c.execute("UPDATE graphile_worker._private_jobs SET locked_at = locked_at - "
                      "interval '10 min' WHERE locked_at IS NOT NULL")
            c.execute("UPDATE graphile_worker._private_job_queues SET locked_at = locked_at - "
                      "interval '10 min' WHERE locked_at IS NOT NULL")
        data = audit(url, "--select", "QU,DW")
    qu = queue_findings(data, TABLE)
    assert qu and all(f["evidence"]["library"] == "graphile-worker" for f in qu)
    backlog = by_rule(data, "QU001")
    assert [(f["evidence"]["queue"], f["evidence"]["depth"]) for f in backlog] == [("mail", 500)]
    locks = [f for f in by_rule(data, "QU002") if f["subject"].startswith("queue lock")]
    assert len(locks) == 1 and locks[0]["evidence"]["queue"] == "serial"
    assert locks[0]["evidence"]["waiting"] == 4 and locks[0]["evidence"]["worker"] == worker_id
    assert f"force_unlock_workers(ARRAY['{worker_id}'])" in locks[0]["fix"]
    (jobs,) = [f for f in by_rule(data, "QU002") if not f["subject"].startswith("queue lock")]
    assert jobs["evidence"]["count"] == 4  # 3 in no queue + the one holding 'serial'
    (failed,) = by_rule(data, "QU004")
    assert failed["evidence"]["count"] == 4 and "reschedule_jobs" in failed["fix"]
    assert not [f for f in qu if "artisan" in f["fix"] or "add workers" in f["fix"].lower()]
