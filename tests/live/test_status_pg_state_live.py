"""`dbwatch status` on a PostgreSQL state ([state] url, a fleet), in a schema of its own on the
real server: found from --config, Nagios exit code; `history` says in one line it cannot."""
from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import PG_URL

from dbwatch.cli import main
from dbwatch.daemon.state import State
from dbwatch.findings import Finding


@pytest.fixture
def pg_state(uniq: str) -> Iterator[str]:
    schema = f"dbw_status_{uniq}"
    yield schema
    with psycopg.connect(PG_URL, autocommit=True) as c:
        c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_status_reads_a_postgresql_state(tmp_path: Path, pg_state: str) -> None:
    st = State(PG_URL, schema=pg_state)
    now = time.time()
    st.update("t1", [Finding("PG002", "warning", "t1", "pid 1", "idle in transaction", "x",
                             identity=[1])], now - 60)
    st.record_cycle("t1", now - 1, 0.2, "ok", None, 1, 0.0)
    st.close()
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[state]\nurl = "{PG_URL}"\nschema = "{pg_state}"\n\n'
                   '[[targets]]\nname = "t1"\nurl = "postgresql://u@h/x"\ninterval = "10s"\n')
    code, out, _ = run("status", "--config", str(cfg), "--format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["firing"][0]["rule"] == "PG002"
    assert doc["targets"][0]["status"] == "ok"
    code, out, _ = run("history", "--config", str(cfg), "--format", "json")
    assert code == 0 and json.loads(out)["fired"][0]["rule"] == "PG002"


def test_dashboard_and_history_over_a_postgresql_state(
    tmp_path: Path, pg_state: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import urllib.request

    from web_fixtures import fill

    from dbwatch.web.server import Dashboard, serve
    from dbwatch.statereader import StateReader

    monkeypatch.setenv("DBWATCH_STATE_SCHEMA", pg_state)
    fill(PG_URL, deadlocks=12)  # the same writes as the SQLite tests, through State
    reader = StateReader.over(State(PG_URL, schema=pg_state))
    srv = serve("127.0.0.1:0", Dashboard(tmp_path / "unused", reader=lambda: reader))
    base = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        pages = {}
        for page in ("/", "/deadlocks", "/deadlocks?pattern=queue-claim-vs-delete",
                     "/deadlocks?table=jobs", "/history?since=24h", "/actions"):
            with urllib.request.urlopen(base + page, timeout=30) as r:
                assert r.status == 200, page
                pages[page] = r.read().decode()
        assert "12 recorded" in pages["/deadlocks"]
        assert pages["/history?since=24h"].count('<svg class="chart"') >= 5
        assert "&lt;script&gt;" in pages["/"] and "<script>" not in pages["/"]
        assert "PG202" in pages["/"] and "terminated" in pages["/actions"]
    finally:
        srv.shutdown()
        reader.close()
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[state]\nurl = "{PG_URL}"\nschema = "{pg_state}"\n')
    code, out, _ = run("history", "--config", str(cfg), "--since", "24h", "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["deadlocks"]["total"] == 12 and len(doc["actions"]) == 3


def test_log_tailer_position_saved_twice_on_a_postgresql_state(pg_state: str) -> None:
    """The deadlock-log tailer keeps its place in the state's meta table: the upsert is the
    dialect both state engines share (SQLite's INSERT OR REPLACE is not PostgreSQL)."""
    from dbwatch.deadlocks.tailer import Position, load_position, save_position

    st = State(PG_URL, schema=pg_state)
    try:
        for offset in (100, 250):  # the second save replaces the first
            with st.transaction() as db:
                save_position(db, "t1", Position(7, offset, "abc"))
        assert load_position(st, "t1") == Position(7, 250, "abc")
        assert load_position(st, "other") is None
    finally:
        st.close()
