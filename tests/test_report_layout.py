"""The terminal table: sized to COLUMNS, names never cut mid-name, the whole fix printed,
colour by severity only on a TTY and never with NO_COLOR, "1 finding"; --version."""
from __future__ import annotations

import os
import pty
import re
import subprocess
import sys

import pytest
from conftest import ROOT

from dbwatch import __version__
from dbwatch.findings import Finding
from dbwatch.pipeline import AuditResult
from dbwatch.report import as_table
from dbwatch.termout import term_width, use_colour, wrap

LONG_FIX = ("End the horizon holder: SELECT pg_terminate_backend(22960); (cancel does nothing to "
            "an idle session), or end the transaction in the application; prevent it with "
            "idle_in_transaction_session_timeout; then VACUUM (VERBOSE) "
            "test.public.que_jobs_story_with_a_long_name;")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def result(n: int = 2) -> AuditResult:
    fs = [
        Finding("PG202", "critical", "pg", "table test.public.que_jobs_story_with_a_long_name",
                "test.public.que_jobs_story_with_a_long_name: 27100 dead tuples (100% of rows), "
                "last vacuum never; horizon held by pid 22960", LONG_FIX),
        Finding("QU301", "warning", "pg", "index test.jobs.jobs_queue_reserved_at_index",
                "legacy index", "ALTER TABLE `test`.`jobs` DROP INDEX `jobs_queue_reserved_at_index`;"),
    ][:n]
    return AuditResult([], extra_findings=fs)


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_fits_the_width_and_prints_the_whole_fix(width: int) -> None:
    out = as_table(result(), width=width, colour=False)
    names = ("que_jobs_story_with_a_long_name", "jobs_queue_reserved_at_index")
    for line in out.splitlines():
        # a line may only be wider when it holds a single name longer than the room for it
        assert len(line) <= width or any(n in line for n in names), line
    words = " ".join(out.split())
    assert " ".join(LONG_FIX.split()) in re.sub(r"\s+", " ", words.replace("fix: ", ""))
    assert "VACUUM (VERBOSE) test.public.que_jobs_story_with_a_long_name;" in " ".join(out.split())
    # identifiers whole on one line, never broken mid-name
    assert any("que_jobs_story_with_a_long_name;" in ln for ln in out.splitlines())
    assert any("jobs_queue_reserved_at_index" in ln for ln in out.splitlines())
    assert "…" not in out


def test_columns_env_sets_the_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert term_width() == 80
    monkeypatch.setenv("COLUMNS", "160")
    assert term_width() == 160
    wide = as_table(result(), colour=False)
    assert max(len(ln) for ln in wide.splitlines()) > 100


def test_wrap_breaks_between_names_only() -> None:
    lines = wrap("see db_one.schema_two.table_three_is_long now", 20)
    assert lines == ["see", "db_one.schema_two.", "table_three_is_long", "now"]
    assert wrap("a_single_name_longer_than_the_width", 10) == ["a_single_name_longer_than_the_width"]


def test_plural_and_colour() -> None:
    one = as_table(result(1), width=100, colour=False)
    assert one.splitlines()[-1] == "1 critical — Status: CRITICAL"
    two = as_table(result(2), width=100, colour=False).splitlines()[-1]
    assert two == "1 critical, 1 warning — Status: CRITICAL"
    coloured = as_table(result(), width=100, colour=True)
    assert "\x1b[1;31mCRITICAL\x1b[0m" in coloured and "\x1b[33mWARNING\x1b[0m" in coloured
    assert coloured.splitlines()[-1].endswith("Status: \x1b[1;31mCRITICAL\x1b[0m")
    assert ANSI.sub("", coloured).split() == as_table(result(), width=100, colour=False).split()


def test_no_color_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_colour() is False


def _run_on_tty(env: dict[str, str]) -> str:
    """`dbwatch audit --log` on a fixture log, its stdout a real pseudo-terminal."""
    log = ROOT / "tests" / "fixtures" / "logs" / "mariadb-general-explicit.log"
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "dbwatch", "audit", "--log", str(log)],
                            stdout=slave, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(master)
    return b"".join(chunks).decode()


def test_colour_on_a_tty_none_with_no_color_or_piped() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env["COLUMNS"] = "80"
    tty = _run_on_tty(env)
    assert "WARNING" in tty and "\x1b[" in tty
    assert "\x1b[" not in _run_on_tty({**env, "NO_COLOR": "1"})
    piped = subprocess.run([sys.executable, "-m", "dbwatch", "audit", "--log",
                            str(ROOT / "tests/fixtures/logs/mariadb-general-explicit.log")],
                           capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert "WARNING" in piped.stdout and "\x1b[" not in piped.stdout
    assert max(len(ln) for ln in piped.stdout.splitlines()) <= 80


def test_version() -> None:
    out = subprocess.run([sys.executable, "-m", "dbwatch", "--version"], capture_output=True,
                         text=True, cwd=ROOT, timeout=30)
    assert out.returncode == 0 and out.stdout.strip() == f"dbwatch {__version__}"
