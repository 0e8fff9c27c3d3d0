"""pg-boss 12 and 10 driven by their own API (createQueue, send, work, supervise) on the local
PostgreSQL: healthy, backlog, exhausted retries, a worker SIGKILLed mid-job (12: its heartbeat
goes stale; 10: the job outlives its expireInSeconds), and pg-boss's own failure of it."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import psycopg
import pytest
from queue_libs import NODE_MODULES, audit, by_rule, need_node, node_env, pg_database, queue_findings

APPS = Path(__file__).with_name("queue_apps")
ENTRY = {"12": ("pg-boss12", "dist/index.js"), "11": ("pg-boss11", "src/index.js"),
         "10": ("pg-boss", "src/index.js")}
TABLE = "pgboss.job"


def _node(env: dict[str, str], *args: str) -> None:
    subprocess.run(["node", "pgboss.mjs", *args], cwd=APPS, env=env, check=True, timeout=60,
                   capture_output=True)


def _active(dsn: str) -> int:
    with psycopg.connect(dsn) as c:
        return int(c.execute("SELECT count(*) FROM pgboss.job WHERE state = 'active'")
                   .fetchone()[0])  # type: ignore[index]


@pytest.mark.parametrize("major", ["12", "11", "10"])
def test_pgboss_every_failure_mode(uniq: str, major: str) -> None:
    package, entry = ENTRY[major]
    need_node(package)
    db = f"dbw_boss{major}_{uniq}"
    with pg_database(db) as dsn:
        url = f"postgresql://postgres@127.0.0.1:5432/{db}"
        env = node_env(PGBOSS_ENTRY=str(NODE_MODULES / package / entry), PG_URL=url)
        if major == "12":
            env["HEARTBEAT"] = "1"
        _node(env, "setup")
        _node(env, "send", "ok", "5")
        _node(env, "drain", "ok")
        assert queue_findings(audit(url, "--select", "QU,DW")) == []
        _node(env, "send", "boom", "4")  # retryLimit 1: each tried twice, then failed
        _node(env, "drain", "boom")
        _node(env, "send", "later", "500")
        with psycopg.connect(dsn, autocommit=True) as c:  # what an hour of waiting looks like
            c.execute("UPDATE pgboss.job SET start_after = start_after - interval '1 hour', "
                      "created_on = created_on - interval '1 hour' WHERE name = 'later'")
        _node(env, "send", "slow", "3")
        worker = subprocess.Popen(["node", "pgboss.mjs", "hang", "slow"], cwd=APPS, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while _active(dsn) < 3 and time.time() < deadline:
            time.sleep(0.2)
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        assert _active(dsn) == 3
        _node(env, "send", "slow", "2")  # waiting behind the 3 the dead worker holds
        with psycopg.connect(dsn, autocommit=True) as c:  # 5 minutes after the kill
            c.execute("UPDATE pgboss.job SET started_on = started_on - interval '5 min'"
                      + (", heartbeat_on = heartbeat_on - interval '5 min'" if major == "12"
                         else "") + " WHERE state = 'active'")
            c.execute("UPDATE pgboss.job SET start_after = start_after - interval '1 hour' "
                      "WHERE name = 'slow' AND state = 'created'")
        data = audit(url, "--select", "QU,DW")
        qu = queue_findings(data, TABLE)
        assert qu and all(f["evidence"]["library"] == "pg-boss" for f in qu)
        assert not [f for f in qu if "artisan" in f["fix"] or "failed_jobs" in f["fix"]]
        backlogs = {f["evidence"]["queue"]: f["evidence"] for f in by_rule(data, "QU001")}
        assert sorted(backlogs) == ["later", "slow"] and backlogs["later"]["depth"] == 500
        # the jobs being worked on beside each backlog: 12's summary reads them, 10/11's
        # reserved query (the summary would scan the table for them a second time)
        assert backlogs["later"]["reserved"] == 0 and backlogs["slow"]["reserved"] == 3
        assert backlogs["slow"]["depth"] == 2 and backlogs["slow"]["window_rows"] == 505
        (stuck,) = by_rule(data, "QU002")
        assert stuck["evidence"]["count"] == 3 and stuck["evidence"]["queues"] == {"slow": 3}
        if major == "12":
            assert stuck["evidence"]["heartbeat"] and stuck["evidence"]["retry_after_seconds"] == 10
            assert "heartbeat" in stuck["summary"] and "job heartbeat timeout" in stuck["fix"]
        else:
            assert stuck["evidence"]["retry_after_seconds"] == 60
            assert stuck["evidence"]["retry_after_source"] == "job expire_seconds / expire_in"
        (failed,) = by_rule(data, "QU004")
        assert failed["evidence"]["count"] == 4 and failed["evidence"]["kind"] == "other"
        assert "boss.retry" in failed["fix"]
        if major == "12":  # pg-boss's own supervisor fails the dead worker's jobs
            _node(env, "supervise", "slow")
            data = audit(url, "--select", "QU,DW")
            lost = [f for f in by_rule(data, "QU004") if f["evidence"]["kind"] == "worker_lost"]
            assert len(lost) == 1 and lost[0]["evidence"]["count"] == 3
            assert "heartbeat" in lost[0]["evidence"]["meaning"] and not by_rule(data, "QU002")
