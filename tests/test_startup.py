"""Startup: a command imports only what it needs (`dbwatch --version` and `--help` import no
driver or library), and the help listed for commands not imported matches their own HELP."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

from dbwatch import cli

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {
    "psycopg",
    "pymysql",
    "tabulate",
    "sqlparse",
    "jinja2",
    "apscheduler",
    "prometheus_client",
    "tomllib",
    "shtab",
}
PROBE = r"""
import contextlib, io, sys
from dbwatch.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(" ".join(sorted({m.split(".")[0] for m in sys.modules})))
"""


def imported(*argv: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def test_version_and_help_import_no_dependency() -> None:
    for argv in (["--version"], ["--help"], []):
        mods = imported(*argv)
        assert "dbwatch" in mods
        assert not mods & HEAVY, (argv, mods & HEAVY)
        assert not any(m.startswith("dbwatch.commands") for m in mods)


def test_a_command_imports_its_own_module_only() -> None:
    mods = imported("rules", "--help")
    assert not mods & {"psycopg", "pymysql", "jinja2", "apscheduler"}, mods & HEAVY
    code = (
        "import sys\nfrom dbwatch.cli import build_parser\nbuild_parser(['status', '--help'])\n"
        "print(' '.join(m for m in sys.modules if m.startswith('dbwatch.commands.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert set(out.stdout.split()) <= {"dbwatch.commands.status", "dbwatch.commands.common"}
    assert "dbwatch.commands.status" in out.stdout.split()


def test_listed_help_matches_each_command() -> None:
    for name in cli.COMMANDS:
        mod = importlib.import_module(f"dbwatch.commands.{name}")
        assert cli.HELPS[name] == mod.HELP, name
    assert set(cli.HELPS) == {*cli.COMMANDS, "explain"}


def test_whole_parser_still_has_every_command() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    choices = getattr(sub, "choices", {}) or {}
    for name in (*cli.COMMANDS, "explain"):
        assert name in choices
        assert choices[name]._actions, name  # arguments added, not a stub
    assert any(a.option_strings for a in choices["audit"]._actions if a.dest != "help")
