"""contrib/scenarios/laravel_deadlocks.py, briefly, on the local MariaDB: summary.json is complete
and its figures agree with each other and with the server (no "must deadlock" assertion: the
optimizer's plan decides whether this run deadlocks, and the summary says which plan it used).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pymysql = pytest.importorskip("pymysql")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "contrib" / "scenarios" / "laravel_deadlocks.py"
MY_URL = os.environ.get("DBWATCH_TEST_MYSQL", "mysql://root@127.0.0.1:3306/test")


def _server_ok() -> bool:
    try:
        pymysql.connect(host="127.0.0.1", user="root", password="", database="test",
                        connect_timeout=2).close()
        return True
    except pymysql.err.MySQLError:
        return False


pytestmark = pytest.mark.skipif(not _server_ok(), reason="no MariaDB at 127.0.0.1:3306")


def run_script(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, check=False)


# The optimizer's own plan (the primary key on MariaDB 10.11: usually no deadlock), and the
# (queue) index forced, the plan it takes once few jobs are left (deadlocks, re-runs).
CONFIGS = {"legacy-fetch": ("--index", "legacy", "--delete", "fetch"),
           "queue-fetch-forced": ("--index", "queue", "--delete", "fetch", "--force-index", "index")}


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def summary(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Any]:
    out = tmp_path_factory.mktemp(request.param)
    p = run_script("--url", MY_URL, "--workers", "12", "--jobs", "600", "--seconds", "15",
                   "--poll", "3", "--out", str(out), *CONFIGS[request.param])
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads((out / "summary.json").read_text())


def test_summary_is_complete(summary: dict[str, Any]) -> None:
    for key in ("throughput_jobs_per_s", "jobs", "workers", "index", "delete", "claim",
                "jobs_completed", "executions", "executed_more_than_once", "left_reserved",
                "deadlocks", "explain", "dbwatch", "machine"):
        assert summary.get(key) is not None, key
    assert (summary["workers"], summary["jobs"], summary["delete"], summary["claim"]) == \
        (12, 600, "fetch", "plain")
    assert summary["machine"]["server"].startswith("10.") and summary["machine"]["cpu_count"]
    assert summary["throughput_jobs_per_s"] > 0 and summary["elapsed_s"] <= 16
    # the plan the claim used, from EXPLAIN
    assert summary["explain"]["claim_key"] in summary["explain"]["seconds_by_key"]
    assert summary["explain"]["changes"][0]["key"]
    if summary["force_index"] == "index":
        assert summary["explain"]["claim_key"] == f"{summary['table']}_queue_index"


def test_jobs_add_up(summary: dict[str, Any]) -> None:
    led = summary["ledger"]
    assert summary["executions"] >= summary["jobs_completed"] > 0
    # every job was either deleted by a worker or is still in the table
    assert summary["jobs_completed"] + summary["left_total"] == summary["jobs"]
    assert summary["left_reserved"] <= summary["left_total"]
    if summary["drained"]:
        assert summary["left_total"] == 0
    # re-runs: each is explained by a rolled-back delete or an expired reservation
    causes = led["rerun_causes"]
    assert causes.get("unexplained", 0) == 0
    assert sum(causes.values()) == summary["executions"] - led["executed"]
    assert led["rerun_and_rolled_back"] <= led["delete_rolled_back"]
    if not causes.get("after_expiry"):
        assert summary["executed_more_than_once"] == led["rerun_and_rolled_back"]
    assert sum(led["executions_histogram"].values()) == led["executed"]


def test_deadlock_counts_agree(summary: dict[str, Any]) -> None:
    dl = summary["deadlocks"]
    client = dl["victim_statement_client"]
    assert dl["client_errors"] == sum(client.values())
    # the server counter is server-wide: other sessions may add to it, never subtract
    assert dl["total"] >= dl["client_errors"]
    log = dl["error_log"]
    if not log["read"]:
        pytest.skip(log["note"])
    assert log["total"] == dl["total"]          # every deadlock the server counted is in the log
    assert log["ours"] == dl["client_errors"]   # each rolled back exactly one of our workers
    from_log = {k: v for k, v in log["victim_statement"].items() if v}
    assert from_log == {k: v for k, v in client.items() if v}
    assert sum(log["by_pattern"].values()) == log["ours"]
    assert all(p.startswith("queue-") for p in log["by_pattern"])   # only queue shapes here


def test_dbwatch_saw_the_table(summary: dict[str, Any]) -> None:
    dbw = summary["dbwatch"]
    assert dbw["audit"]["runs"] >= 1 and dbw["deadlocks"]["runs"] >= 1
    table = summary["table"]
    # the legacy index is there whether or not this run deadlocked
    legacy = any(s.startswith("QU301 index test." + table)
                 for s in dbw["audit"]["about_this_table"])
    assert legacy == (summary["index"] == "legacy")
    # polling sees some of this run's deadlocks (the latest at each poll), never more
    assert dbw["deadlocks"]["distinct_seen"] <= summary["deadlocks"]["client_errors"]
    with pymysql.connect(host="127.0.0.1", user="root", password="", database="test") as c, \
            c.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_name = %s",
                    (table,))
        assert cur.fetchone()[0] == 0            # dropped at the end


def test_bad_url_is_one_line_exit_3(tmp_path: Path) -> None:
    p = run_script("--url", "mysql://root:s3cret@127.0.0.1:1/test", "--out", str(tmp_path),
                   timeout=30)
    assert p.returncode == 3
    assert len(p.stderr.strip().splitlines()) == 1 and "s3cret" not in p.stderr
    p = run_script("--url", "postgresql://x@127.0.0.1/test", "--out", str(tmp_path), timeout=30)
    assert p.returncode == 3 and "--url" in p.stderr and "Traceback" not in p.stderr
