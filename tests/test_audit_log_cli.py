"""`dbwatch audit --log`: real captured logs through the CLI, as a user runs it."""
from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path
from schemas import load_json

LOGS = Path(__file__).resolve().parent / "fixtures" / "logs"


def audit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dbwatch", "audit", *args, "--format", "json"],
                          capture_output=True, text=True, timeout=60)


def test_general_log_of_fetch_before_delete_reports_qu401() -> None:
    proc = audit("--log", str(LOGS / "mariadb-general-pdo-prepared.log"))
    assert proc.returncode == 1, proc.stderr
    doc = load_json(proc.stdout, "audit")
    rules = {f["rule"]: f for f in doc["findings"]}
    assert rules["QU401"]["evidence"]["count"] >= 1
    assert "DELETE" in rules["QU401"]["fix"].upper()
    # MariaDB 10.11 (from the log's Version: header) has SKIP LOCKED, so the claim is QU402
    assert rules["QU402"]["confidence"] == "high"
    assert doc["logs"][0]["format"] == "mysql-general"
    assert "10.11" in doc["logs"][0]["server_version"]


def test_single_delete_worker_log_is_clean() -> None:
    proc = audit("--log", str(LOGS / "mariadb-general-single-delete.log"))
    assert proc.returncode == 0, proc.stderr
    assert load_json(proc.stdout, "audit")["findings"] == []


def test_gzip_and_select(tmp_path: Path) -> None:
    gz = tmp_path / "general.log.gz"
    gz.write_bytes(gzip.compress((LOGS / "mariadb-general-explicit.log").read_bytes()))
    doc = load_json(audit("--log", str(gz), "--select", "QU401").stdout, "audit")
    assert [f["rule"] for f in doc["findings"]] == ["QU401"]


def test_missing_log_is_one_clean_line(tmp_path: Path) -> None:
    proc = audit("--log", str(tmp_path / "nope.log"))
    assert proc.returncode == 3
    assert "nope.log" in proc.stderr and "Traceback" not in proc.stderr
