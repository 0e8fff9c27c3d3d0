"""Every command's output fits COLUMNS (issue 24.5): each is rendered at 60, 80 and 200
columns, every line is checked against the width, and what must never be cut — a target,
a reason, a fix, a rule's text — is checked whole in the output, modulo wrapping (the
output's words with the line breaks and indentation taken out)."""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from web_fixtures import fill

from dbwatch.catalogue import load_catalogue
from dbwatch.cli import main

ROOT = Path(__file__).resolve().parent.parent
INNODB = ROOT / "tests" / "fixtures" / "innodb"
WIDTHS = (60, 80, 200)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def dbwatch(columns: int, *args: str) -> tuple[int, str]:
    """The CLI in-process at COLUMNS=columns; stdout (argparse's --help exits: caught)."""
    saved = {k: os.environ.get(k) for k in ("COLUMNS", "DBWATCH_CONFIG", "NO_COLOR")}
    os.environ.update(COLUMNS=str(columns), NO_COLOR="1")
    os.environ.pop("DBWATCH_CONFIG", None)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = int(exc.code or 0)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return code, out.getvalue()


def squeeze(text: str) -> str:
    return "".join(ANSI.sub("", text).split())


def assert_fits(out: str, width: int, what: str) -> None:
    long = [ln for ln in out.splitlines() if len(ANSI.sub("", ln)) > width]
    assert not long, f"{what} at {width} columns: {len(long)} lines too wide, e.g. {long[0]!r}"


def assert_whole(out: str, text: str, what: str) -> None:
    """`text` appears in the output unbroken but for the line breaks wrapping put in."""
    assert squeeze(text) in squeeze(out), f"{what}: {text[:80]!r}… is cut or missing"


def assert_cell(out: str, text: str, what: str) -> None:
    """A table cell: wrapped only between name parts (after . , / or -), each part whole."""
    flat = squeeze(out)
    for part in re.findall(r"[^.,/-]+[.,/-]?", squeeze(text)):
        assert part in flat, f"{what}: {part!r} of {text!r} is cut or missing"


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("width") / "state.db"
    fill(path, payload="", now=time.time())
    yield path


@pytest.mark.parametrize("width", WIDTHS)
def test_help_of_every_command(width: int) -> None:
    from dbwatch.commands import COMMANDS

    for cmd in ([], *([c] for c in COMMANDS)):
        code, out = dbwatch(width, *cmd, "--help")
        assert code == 0 and "usage:" in out
        assert_fits(out, width, f"dbwatch {' '.join(cmd)} --help")
    _, out = dbwatch(width, "terminate", "--help")
    assert_whole(out, "Exit status: 0 done (or dry run), 1 an action failed, 3 a target was "
                 "unreachable or bad input.", "terminate --help")


@pytest.mark.parametrize("width", WIDTHS)
def test_rules_and_every_explain(width: int) -> None:
    code, out = dbwatch(width, "rules")
    assert code == 0
    assert_fits(out, width, "rules")
    catalogue = load_catalogue()
    for rule in catalogue.values():
        for part in re.split(r"-", rule.name):  # a long name wraps only after a '-'
            assert part in out, (rule.id, part)
        code, text = dbwatch(width, "explain", rule.id)
        assert code == 0
        assert_fits(text, width, f"explain {rule.id}")
        for sec in ("what", "why", "fix"):
            assert_whole(text, str(rule.doc[sec]), f"explain {rule.id} {sec}")
        for ref in rule.references:
            assert_whole(text, ref, f"explain {rule.id} reference")


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("source", [
    ("--file", "mariadb-laravel-legacy-index.txt"),
    ("--file", "mariadb-opposite-order.txt"),
    ("--file", "mysql8-manual-example-status.txt"),
    ("--log", "mariadb-error-log-excerpt.log"),
])
def test_deadlocks_diagnosis_wrapped_not_cut(width: int, source: tuple[str, str]) -> None:
    flag, name = source
    code, out = dbwatch(width, "deadlocks", flag, str(INNODB / name))
    assert code == 0
    assert_fits(out, width, f"deadlocks {name}")
    _, raw = dbwatch(200, "deadlocks", flag, str(INNODB / name), "--format", "json")
    for dl in json.loads(raw)["deadlocks"]:
        diag = dl["diagnosis"]
        assert_whole(out, diag["explanation"], f"{name} diagnosis")
        if diag.get("fix"):
            assert_whole(out, diag["fix"], f"{name} fix")
        for lk in dl["locks"]:
            for key in ("db", "table", "index"):
                if lk.get(key):
                    assert_cell(out, lk[key], f"{name} lock {key}")
    code, out = dbwatch(width, "deadlocks", flag, str(INNODB / name), "--summary")
    assert code == 0
    assert_fits(out, width, f"deadlocks --summary {name}")


@pytest.mark.parametrize("width", WIDTHS)
def test_status_history_and_journal(width: int, state: Path) -> None:
    for args in (("status",), ("history", "--since", "7d"), ("deadlocks", "--history"),
                 ("deadlocks", "--history", "--summary")):
        _, out = dbwatch(width, *args, "--state", str(state))
        assert_fits(out, width, " ".join(args))
        if args[0] == "history":
            for word in ("pg-main", "maria-queue", "test.jobs.jobs_queue_reserved_at_index",
                         "app.public.que_jobs", "terminate.after"):
                assert_cell(out, word, f"history target/subject {word}")
        if args[0] == "status":
            for word in ("pg-main", "maria-queue", "app.public.que_jobs"):
                assert_cell(out, word, f"status {word}")


@pytest.mark.parametrize("width", WIDTHS)
def test_terminate_keeps_target_reason_and_statement_whole(width: int, pg_admin: object,
                                                           uniq: str) -> None:
    """A real session idle in transaction, with a long application name, in a database made
    here: the dry run names it whole at every width."""
    import psycopg

    db = f"nc_width_{uniq}"
    admin: psycopg.Connection = pg_admin  # type: ignore[assignment]
    admin.execute(f'CREATE DATABASE "{db}"')
    app = "billing-worker-with-a-long-descriptive-application-name"
    idle = psycopg.connect(f"postgresql://postgres@127.0.0.1:5432/{db}", application_name=app,
                           user="postgres")
    try:
        idle.execute("SELECT 1")  # a transaction is open (autocommit off): idle in transaction
        url = f"postgresql://postgres@127.0.0.1:5432/{db}"
        code, out = dbwatch(width, "terminate", url, "--idle-in-transaction",
                            "--include-superusers")
        assert code == 0, out
        assert_fits(out, width, "terminate")
        pid = idle.info.backend_pid
        assert_cell(out, url, "terminate target")
        assert_cell(out, app, "terminate application")
        assert_whole(out, f"SELECT pg_terminate_backend({pid})", "terminate statement")
        _, raw = dbwatch(200, "terminate", url, "--idle-in-transaction", "--include-superusers",
                         "--format", "json")
        (mine,) = [d for d in json.loads(raw) if d.get("pid") == pid]
        assert_whole(out, mine["reason"], "terminate reason")
    finally:
        idle.close()
        admin.execute(f'DROP DATABASE "{db}" WITH (FORCE)')


@pytest.mark.parametrize("width", WIDTHS)
def test_audit_table(width: int, pg_admin: object, uniq: str) -> None:
    import psycopg

    db = f"nc_width_{uniq}"
    admin: psycopg.Connection = pg_admin  # type: ignore[assignment]
    admin.execute(f'CREATE DATABASE "{db}"')
    try:
        url = f"postgresql://postgres@127.0.0.1:5432/{db}"
        _, out = dbwatch(width, "audit", url, "--select", "PG5")
        assert_fits(out, width, "audit")
        assert "Status:" in out
    finally:
        admin.execute(f'DROP DATABASE "{db}" WITH (FORCE)')


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
