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


def test_a_general_log_pasted_with_its_tabs_made_spaces_reads_the_same(tmp_path: Path) -> None:
    """Copied from a terminal, a web page or an issue, a general log's tabs are spaces, or its
    lines carry a reply's `>` marks: it is read as the same log (same statements, same
    findings), with or without its header lines."""
    src = LOGS / "mariadb-general-pdo-prepared.log"
    want = load_json(audit("--log", str(src)).stdout, "audit")
    lines = src.read_text().splitlines()
    variants = {"tabs8": [ln.expandtabs(8) for ln in lines],
                "tabs4": [ln.expandtabs(4) for ln in lines],
                "no header, left-trimmed": [ln.expandtabs(8).lstrip() for ln in lines[3:]],
                # quoted in a reply (e-mail, an issue): the marks, the text inside them
                "quoted": ["> " + ln for ln in lines],
                "quoted twice": ["> > " + ln for ln in lines],
                "quoted, tabs made spaces": [">" + ln.expandtabs(8) for ln in lines]}
    for name, text in variants.items():
        p = tmp_path / f"{name}.log"
        p.write_text("\n".join(text) + "\n")
        proc = audit("--log", str(p))
        assert proc.returncode == 1, (name, proc.stderr)
        doc = load_json(proc.stdout, "audit")
        assert doc["logs"][0]["statements"] == want["logs"][0]["statements"], name
        assert doc["logs"][0]["unreadable_lines"] == 0, name
        got = [(f["rule"], f["evidence"]["count"]) for f in doc["findings"]]
        assert got == [(f["rule"], f["evidence"]["count"]) for f in want["findings"]], name


def test_a_log_with_no_statement_in_it_is_unknown_not_ok(tmp_path: Path) -> None:
    """Nothing read is nothing checked: exit 3 with the file named, never "no findings — OK"."""
    pg = tmp_path / "pg.log"      # a PostgreSQL log without log_statement: errors only
    pg.write_text("2026-11-27 07:00:00.123 UTC [4711] LOG:  checkpoint starting: time\n"
                  "2026-11-27 07:00:01.456 UTC [4711] LOG:  checkpoint complete: wrote 3 "
                  "buffers (0.0%)\n")
    proc = audit("--log", str(pg))
    assert proc.returncode == 3, proc.stderr
    assert f"{pg}: not one statement read from its 2 lines as a postgresql-stderr log" \
        in proc.stderr and "log_statement = 'all'" in proc.stderr
    assert load_json(proc.stdout, "audit")["findings"] == []
    junk = tmp_path / "general.log"  # a general log's header, then what no server writes
    junk.write_text("Time                 Id Command    Argument\nsome prose\nmore prose\n")
    proc = audit("--log", str(junk))
    assert proc.returncode == 3 and "2 of them not understood" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
