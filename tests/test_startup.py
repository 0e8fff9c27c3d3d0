"""Startup: a command imports only what it needs (`dbwatch --version` and `--help` import no
driver or library), and every command module is registered (dbwatch/commands/__init__.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dbwatch import cli
from dbwatch.commands import COMMANDS

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
print(" ".join(sorted(m for m in sys.modules if m.startswith("dbwatch.commands."))))
"""


def imported(*argv: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0, out.stderr
    top, commands = (out.stdout.split("\n") + ["", ""])[:2]
    return set(top.split()) | set(commands.split())


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


def test_every_command_module_is_registered() -> None:
    """A module in dbwatch/commands/ is a registered command (or the shared `common`), and
    every registered command's module provides add_arguments and run."""
    modules = {p.stem for p in (ROOT / "dbwatch" / "commands").glob("*.py")}
    assert modules - {"__init__", "common"} == set(COMMANDS)
    for cmd in COMMANDS.values():
        mod = cmd.load()
        assert callable(mod.add_arguments) and callable(mod.run), cmd.name
        assert cmd.help and "\n" not in cmd.help, cmd.name


def test_whole_parser_still_has_every_command() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    choices = getattr(sub, "choices", {}) or {}
    for name in COMMANDS:
        assert name in choices
        assert choices[name]._actions, name  # arguments added, not a stub
    assert any(a.option_strings for a in choices["audit"]._actions if a.dest != "help")
