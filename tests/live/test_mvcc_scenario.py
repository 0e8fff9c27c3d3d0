"""The MVCC queue story end to end: contrib/scenarios/mvcc_bloat.py with `dbwatch watch` and
[terminate] beside it, on the local PostgreSQL; the daemon ends the analytics session once,
after the threshold, and the run leaves nothing behind.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
from conftest import PG_URL, ROOT

SCRIPT = ROOT / "contrib" / "scenarios" / "mvcc_bloat.py"
THRESHOLD = 8.0
DURATION = 26.0


def _run(out: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--url", PG_URL, "--duration", str(DURATION),
         "--watchdog", "terminate", "--threshold", f"{THRESHOLD:g}s", "--rate", "200",
         "--workers", "3", "--analytics-at", "3", "--no-plot", "--out", str(out)],
        check=False, capture_output=True, text=True, timeout=DURATION + 45, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return summary


def test_daemon_terminates_the_horizon_holder_once(tmp_path: Path) -> None:
    s = _run(tmp_path)
    pid = s["analytics_pid"]
    assert isinstance(pid, int)
    assert s["terminations"] == 1, s["actions"]
    assert s["terminated_pids"] == [pid]
    # after the threshold (the transaction's age), and well before the run ended
    assert s["terminated_at_s"] >= s["analytics_opened_s"] + THRESHOLD
    assert s["terminated_at_s"] < DURATION - 2
    assert s["analytics_gone_s"] is not None and not s["analytics_alive_at_end"]
    # dbwatch said something about the holder or its table before it acted
    assert s["first_alert_s"] is not None and s["first_alert_s"] <= s["terminated_at_s"]
    assert any(a["rule"] in ("PG201", "PG001") and a["subject"] == f"pid {pid}"
               for a in s["alerts"])
    assert s["dead_tuples_max"] > 0
    assert (tmp_path / "timeline.csv").read_text().count("\n") >= DURATION / 2 - 2
    with psycopg.connect(PG_URL, autocommit=True) as c:
        assert c.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s",
                         (pid,)).fetchone() == (0,)
        assert c.execute("SELECT to_regclass(%s)", (s["table"],)).fetchone() == (None,)
