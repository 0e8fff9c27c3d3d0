"""Job libraries dbwatch has no module for, each driven by its own code (schema, enqueue API,
worker) into four cells — healthy, backlog (300 due), failed (10 failed for good by the
library's own retry exhaustion), stuck (3 claimed by a worker that is SIGKILLed, timestamps
moved past the library's own timeout) — each in a database of its own, then audited with a URL
that names that database only. Every cell is first proved by SQL on the library's own tables
(independent of dbwatch); then the generic queue model must answer: healthy → no QU finding;
unhealthy → the exact finding where the table holds the fact, else a DW002 naming the table and
what could not be judged; never another library's words or evidence.library. The expected
answers and why: tests/live/unknown_libs.py and docs/queues-unknown.md.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pymysql
import pytest
import yaml
from queue_libs import NODE_MODULES, PY_LIBS, audit, by_rule, node_env, pg_database, py_env
from unknown_libs import CELLS, LIBS, Finding, Gap, Lib, Quiet, gaps_for, my_database

APPS = Path(__file__).with_name("queue_apps") / "unknown"
LAYOUTS = Path(__file__).parents[1] / "fixtures" / "queue_layouts" / "layouts.yaml"
INTERVAL = {"postgresql": {"1h": "interval '1 hour'", "2h": "interval '2 hours'"},
            "mariadb": {"1h": "INTERVAL 1 HOUR", "2h": "INTERVAL 2 HOUR"}}
# words of the libraries dbwatch has modules for: none may describe a table it does not know
FOREIGN = ("artisan", "Laravel", "failed_jobs", "procrastinate", "pg-boss", "pgboss", "graphile",
           "Oban", "GoodJob", "good_job", "Solid Queue", "solid_queue", "Delayed::Job",
           "delayed_job", "pgqueuer", "Symfony", "messenger:")
FORBIDDEN = {"backlog": ("QU002", "QU003", "QU004"), "failed": ("QU001", "QU002"),
             "stuck": ("QU003", "QU004")}


def run_sql(engine: str, db: str, stmt: str) -> int:
    """Execute one statement on the cell's database; a SELECT returns its single number."""
    if engine == "postgresql":
        with psycopg.connect(f"host=127.0.0.1 port=5432 user=postgres dbname={db}",
                             autocommit=True) as c:
            cur = c.execute(stmt)  # type: ignore[arg-type]
            return int(cur.fetchone()[0]) if cur.description else cur.rowcount  # type: ignore[index]
    conn = pymysql.connect(host="127.0.0.1", user="root", password="", database=db,
                           autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute(stmt)
            return int(cur.fetchone()[0]) if cur.description else cur.rowcount
    finally:
        conn.close()


def live_columns(engine: str, db: str, table: str) -> list[list[object]]:
    """[name, type, nullable] as tests/fixtures/queue_layouts/layouts.yaml records them."""
    schema, _, name = table.rpartition(".")
    if engine == "postgresql":
        with psycopg.connect(f"host=127.0.0.1 port=5432 user=postgres dbname={db}") as c:
            rows = c.execute(
                "SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull "
                "FROM pg_attribute a JOIN pg_class r ON r.oid = a.attrelid "
                "JOIN pg_namespace n ON n.oid = r.relnamespace WHERE n.nspname = %s "
                "AND r.relname = %s AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                (schema or "public", name)).fetchall()
        return [[a, b, bool(n)] for a, b, n in rows]
    conn = pymysql.connect(host="127.0.0.1", user="root", password="", database=db)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE = 'YES' FROM "
                        "information_schema.COLUMNS WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s"
                        " ORDER BY ORDINAL_POSITION", (db, name))
            return [[a, b, bool(n)] for a, b, n in cur.fetchall()]
    finally:
        conn.close()


def recorded_layouts(lib: Lib) -> list[dict[str, Any]]:
    doc = yaml.safe_load(LAYOUTS.read_text())
    return [e for e in doc["layouts"] if e["source"] == f"{lib.key} {lib.version}"
            and e["engine"] == lib.engine and e["label"] == "queue"]


def need(lib: Lib) -> None:
    if lib.language == "python":
        missing = [m for m in lib.needs if not (PY_LIBS / m).exists()]
        where = PY_LIBS
    else:
        missing = [m for m in lib.needs if not (NODE_MODULES / m / "package.json").is_file()]
        where = NODE_MODULES
        if subprocess.run(["node", "--version"], capture_output=True, check=False).returncode != 0:
            pytest.skip("node is not installed")
    if missing:
        pytest.skip(f"{lib.key}: {', '.join(missing)} not installed in {where} (.ci/run installs)")


def drive(lib: Lib, db: str, cell: str) -> None:
    extra = {"DB_ENGINE": lib.engine, "DB_NAME": db}
    if lib.language == "python":
        argv = [sys.executable, lib.driver, cell]
        env = py_env(**extra)
        env["PYTHONPATH"] += ":" + str(APPS)
    else:
        argv, env = ["node", lib.driver, cell], node_env(**extra)
    out = subprocess.run(argv, cwd=APPS, env=env, capture_output=True, text=True, timeout=180, check=False)
    assert out.returncode == 0, f"{lib.key} {cell}: {out.stderr[-2000:]}"


def build_cell(lib: Lib, cell: str, tag: str) -> tuple[str, dict[str, Any]]:
    """Drive one cell in a fresh database, prove it by SQL, age it, audit it; drop it."""
    slug = re.sub(r"[^a-z]", "", lib.key.lower())[:10]
    db = f"dbw_unk_{slug}_{lib.engine[:2]}_{cell[:4]}_{tag}"
    ctx = pg_database(db) if lib.engine == "postgresql" else my_database(db)
    with ctx:
        drive(lib, db, cell)
        stmt, n = lib.proof[cell]
        got = run_sql(lib.engine, db, stmt)
        assert got == n, f"{lib.key} {cell}: the library left {got}, not {n}: {stmt}"
        if cell == "backlog":  # the recorded layouts are still what the library creates
            recorded = recorded_layouts(lib)
            assert recorded, f"{lib.key}: no queue layout in {LAYOUTS}"
            for e in recorded:
                assert live_columns(lib.engine, db, e["table"]) == e["columns"], e["table"]
        for upd in lib.aging.get(cell, ()):
            run_sql(lib.engine, db, upd.format(**INTERVAL[lib.engine]))
        url = (f"postgresql://postgres@127.0.0.1:5432/{db}" if lib.engine == "postgresql"
               else f"mysql://root@127.0.0.1:3306/{db}")
        return db, audit(url, "--select", "QU,DW")


_POOL: ThreadPoolExecutor | None = None
_BUILT: dict[tuple[str, str], Future[tuple[str, dict[str, Any]]]] = {}
_SELECTED: set[str] = set()  # the libraries whose tests this session runs


def ident(lib: Lib) -> str:
    return f"{lib.key}/{lib.engine}"


def cell_of(lib: Lib, cell: str) -> tuple[str, dict[str, Any]]:
    """One cell of a library. On the first call the cells of every selected, installed library
    are submitted to one pool (most of a cell's time is waiting on workers and servers, so they
    overlap); a cell whose build failed fails its own test only, with the build's error."""
    global _POOL
    need(lib)
    if _POOL is None:
        _POOL = ThreadPoolExecutor(6)
        tag = uuid.uuid4().hex[:6]
        for other in LIBS:
            if ident(other) in _SELECTED:
                for c in CELLS:
                    _BUILT[(ident(other), c)] = _POOL.submit(_guarded, other, c, tag)
    return _BUILT[(ident(lib), cell)].result()


def _guarded(lib: Lib, cell: str, tag: str) -> tuple[str, dict[str, Any]]:
    try:
        need(lib)
    except pytest.skip.Exception as e:  # its own test skips with the reason (need() again)
        raise RuntimeError(str(e)) from None
    return build_cell(lib, cell, tag)


@pytest.fixture(scope="module", autouse=True)
def _pool(request: pytest.FixtureRequest) -> Iterator[None]:
    for item in request.session.items:
        lib = getattr(item, "callspec", None) and item.callspec.params.get("lib")
        if isinstance(lib, Lib):
            _SELECTED.add(ident(lib))
    yield
    if _POOL is not None:
        _POOL.shutdown(wait=True)


def qualified(lib: Lib, table: str, db: str) -> str:
    if "." in table:
        return table
    return ("public." if lib.engine == "postgresql" else f"{db}.") + table


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("lib", LIBS, ids=lambda lib: f"{lib.key}-{lib.engine}")
def test_unknown_library_cell(lib: Lib, cell: str) -> None:
    db, data = cell_of(lib, cell)
    qu = [f for f in data["findings"] if f["rule"].startswith("QU")]
    assert not by_rule(data, "DW001"), by_rule(data, "DW001")
    for f in qu:
        assert f["evidence"].get("library") == "generic", f
        text = f"{f['summary']} {f.get('fix', '')}"
        assert not [w for w in FOREIGN if w in text], f
    assert not [f for f in qu if f["rule"] in FORBIDDEN.get(cell, ())], qu
    expect = lib.expect[cell]
    if isinstance(expect, Quiet):
        assert qu == [], qu
    elif isinstance(expect, Finding):
        table = qualified(lib, expect.table or lib.table, db)
        hits = [f for f in by_rule(data, expect.rule) if f["evidence"].get("table") == table]
        assert hits, f"no {expect.rule} on {table}: {json.dumps(data['findings'])[:3000]}"
        assert sum(int(f["evidence"][expect.key]) for f in hits) == expect.n, hits
    else:
        assert isinstance(expect, Gap)
        table = qualified(lib, expect.table or lib.table, db)
        gaps = gaps_for(data, table)
        assert any(expect.what in json.dumps(g).lower() for g in gaps), (
            f"no DW002 naming {table} and '{expect.what}': {json.dumps(data['findings'])[:3000]}")
    if cell == "stuck":  # a backlog the stuck jobs make may be reported, never a bigger one
        assert all(int(f["evidence"].get("depth", 0)) <= 3 for f in by_rule(data, "QU001"))
