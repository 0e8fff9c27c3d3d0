"""`dbwatch deadlocks` on files: bad input exits 3 with one line, --summary, --log alias."""
from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from schemas import load_json

ROOT = Path(__file__).resolve().parent.parent
VAR = ROOT / "tests" / "fixtures" / "innodb" / "variants"
FIX = ROOT / "tests" / "fixtures" / "innodb"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "dbwatch", "deadlocks", *args],
                          capture_output=True, text=True, env=env, timeout=60)


def bad_files(tmp: Path) -> dict[str, Path]:
    (tmp / "empty.log").write_text("")
    (tmp / "random.txt").write_text("lorem ipsum dolor\nsit amet 12 34\n" * 50)
    full = gzip.compress((FIX / "mariadb-error-log-excerpt.log").read_bytes())
    (tmp / "cut.log.gz").write_bytes(full[: len(full) // 2])
    return {"binary": Path("/bin/ls"), "empty": tmp / "empty.log",
            "random": tmp / "random.txt", "truncated-gzip": tmp / "cut.log.gz"}


@pytest.mark.parametrize("opt", ["--file", "--error-log", "--log"])
@pytest.mark.parametrize("kind", ["binary", "empty", "random", "truncated-gzip"])
def test_nothing_recognisable_exits_3_with_one_line(tmp_path: Path, opt: str, kind: str) -> None:
    path = bad_files(tmp_path)[kind]
    if not path.exists():
        pytest.skip(f"{path} absent")
    r = run(opt, str(path))
    assert r.returncode == 3, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "expected" in lines[0]
    assert "Traceback" not in r.stderr and "No deadlocks" not in r.stdout


def test_log_without_deadlocks_says_so(tmp_path: Path) -> None:
    log = tmp_path / "quiet.log"
    log.write_text("2026-11-22  2:01:37 0 [Note] InnoDB: Buffer pool(s) load completed\n" * 5)
    r = run("--error-log", str(log))
    assert r.returncode == 0
    assert r.stdout.strip() == f"no deadlocks in {log} (5 lines read, error log)"


def test_summary_json_and_table(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    one = (FIX / "mariadb-error-log-excerpt.log").read_text()
    laravel = (VAR / "mysql57-laravel-jobs-cut-delete.log").read_text()
    big.write_text(one * 3 + laravel * 2)
    r = run("--log", str(big), "--summary", "--format", "json")
    assert r.returncode == 0, r.stderr
    s = load_json(r.stdout, "deadlocks")["summary"]
    assert s["deadlocks"] == 14
    assert s["by_pattern"] == {"queue-legacy-index": 12, "queue-claim-vs-delete": 2}
    assert s["by_table"]["laravel.jobs"] == 2
    assert sum(s["by_hour"].values()) == 14 and "2019-06-12 08:00" in s["by_hour"]
    assert sum(s["by_victim_statement"].values()) == 14
    t = run("--log", str(big), "--summary")
    assert "14 deadlocks in" in t.stdout and "queue-claim-vs-delete" in t.stdout


def test_victim_inferred_in_json(tmp_path: Path) -> None:
    f = tmp_path / "status.txt"
    text = (FIX / "mariadb-laravel-queue-index.txt").read_text()
    f.write_text(text.replace("WE ROLL BACK TRANSACTION (1)", "WE ROLL BACK TRANSACTION (0)")
                 .replace("WE ROLL BACK TRANSACTION (2)", "WE ROLL BACK TRANSACTION (0)"))
    r = run("--file", str(f), "--format", "json")
    (dl,) = load_json(r.stdout, "deadlocks")["deadlocks"]
    assert dl["victim_inferred"] is True and dl["victim_evidence"]
    assert run("--file", str(f)).stdout.count("Victim inferred: ") == 1


def test_paste_of_only_the_section_via_file(tmp_path: Path) -> None:
    text = (FIX / "mariadb-laravel-queue-index.txt").read_text()
    a = text.index("LATEST DETECTED DEADLOCK")
    b = text.index("------------\nTRANSACTIONS")
    f = tmp_path / "paste.txt"
    f.write_text("\n".join("> " + ln for ln in text[a:b].splitlines()))
    r = run("--file", str(f), "--format", "json")
    assert r.returncode == 0 and len(load_json(r.stdout, "deadlocks")["deadlocks"]) == 1
