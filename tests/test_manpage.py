"""dbwatch(1) is generated from the parser: every command and option is in it, and man renders
it without warnings; the shipped docs/dbwatch.1 covers every command."""
from __future__ import annotations

import argparse
import shutil
import subprocess

import pytest
from conftest import ROOT

from dbwatch.cli import build_parser
from dbwatch.manpage import render


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_command_and_option_is_documented() -> None:
    parser = build_parser()
    page = render(parser, "2026-01-01")
    for name, p in _commands(parser).items():
        assert f'.SS "dbwatch {name}"' in page
        for act in p._actions:
            for opt in act.option_strings:
                if act.help != argparse.SUPPRESS:
                    assert opt.replace("-", "\\-") in page, (name, opt)
    for section in ("EXIT STATUS", "ENVIRONMENT", "NO_COLOR", "EXAMPLES"):
        assert section in page


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_man_renders_it_without_warnings(tmp_path) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "dbwatch.1"
    src.write_text(render(build_parser()))
    out = subprocess.run(["man", "--warnings", "-l", str(src)], capture_output=True, text=True,
                         env={"MANWIDTH": "80", "PATH": "/usr/bin:/bin", "MANPAGER": "cat"},
                         timeout=60)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert "dbwatch status" in out.stdout and "NO_COLOR" in out.stdout


def test_shipped_man_page_lists_every_command() -> None:
    shipped = (ROOT / "docs" / "dbwatch.1").read_text()
    for name in ("audit", "deadlocks", "terminate", "watch", "status", "history", "completion"):
        assert f'.SS "dbwatch {name}"' in shipped


def test_shipped_man_page_is_the_parsers() -> None:
    """docs/dbwatch.1 is what `python -m dbwatch.manpage` prints now (its date aside): a new
    option or help text without regenerating it fails here."""
    import re

    shipped = (ROOT / "docs" / "dbwatch.1").read_text()
    m = re.search(r'^\.TH DBWATCH 1 "([^"]*)"', shipped, re.MULTILINE)
    assert m, "docs/dbwatch.1 has no .TH line"
    fresh = render(build_parser(), m.group(1))
    assert shipped == fresh, (
        "docs/dbwatch.1 is stale: regenerate it with `python -m dbwatch.manpage > docs/dbwatch.1`"
    )
