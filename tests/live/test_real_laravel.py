"""Real Laravel 8.83 (Debian's Illuminate packages, tests/laravel/worker.php) pushes and works
jobs on the local MariaDB under the general log; `dbwatch audit --log` must report Laravel's own
fetch-before-delete (QU401), and QU402 only when Laravel claimed without SKIP LOCKED.
"""
from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pymysql = pytest.importorskip("pymysql")

from busy_neighbour import busy_neighbour, neighbour_was_logged  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "tests" / "laravel" / "worker.php"
AUTOLOADERS = [Path("/usr/share/php/Illuminate/Database/autoload.php"),
               Path("/usr/share/php/Illuminate/Queue/autoload.php")]
N_JOBS = 30


def _missing() -> str | None:
    if shutil.which("php") is None:
        return "php not installed (apt-get install php-cli php-mysql)"
    gone = [str(p) for p in AUTOLOADERS if not p.is_file()]
    if gone:
        return ("Laravel's Illuminate packages not installed (apt-get install "
                f"php-illuminate-queue php-illuminate-database): no {', '.join(gone)}")
    try:
        pymysql.connect(host="127.0.0.1", user="root", password="", connect_timeout=2).close()
    except pymysql.err.MySQLError as exc:
        return f"no MariaDB at 127.0.0.1:3306 ({exc})"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


def _admin() -> Any:
    return pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)


def _php(*args: str) -> str:
    p = subprocess.run(["php", str(WORKER), *args], capture_output=True, text=True,
                       timeout=60, check=False)
    assert p.returncode == 0, f"worker.php {' '.join(args)}: {p.stdout}{p.stderr}"
    return p.stdout


@contextlib.contextmanager
def _general_log() -> Iterator[Path]:
    """The general log into a temp file; every old value put back, the server left as found."""
    d = Path(tempfile.mkdtemp(prefix="dw-laravel-"))
    d.chmod(0o777)               # the server writes as the mysql user
    path = d / "general.log"
    admin = _admin()
    with admin.cursor() as cur:
        cur.execute("select @@global.general_log, @@global.general_log_file, "
                    "@@global.log_output")
        old_on, old_file, old_output = cur.fetchone()
    try:
        with admin.cursor() as cur:
            cur.execute("set global log_output = 'FILE'")
            cur.execute("set global general_log_file = %s", (str(path),))
            cur.execute("set global general_log = ON")
        yield path
    finally:
        with admin.cursor() as cur:
            cur.execute("set global general_log = %s", ("ON" if old_on else "OFF",))
            cur.execute("set global general_log_file = %s", (old_file,))
            cur.execute("set global log_output = %s", (old_output,))
        admin.close()


def _laravel_run(uniq: str, *version: str) -> tuple[dict[str, Any], str, str]:
    """Create Laravel's jobs table, push and work N_JOBS under the general log, another client
    busy beside it; audit the log."""
    db, table = f"dw_laravel_{uniq}", f"jobs_{uniq}"
    admin = _admin()
    try:
        with admin.cursor() as cur:
            cur.execute(f"create database {db}")
        _php(db, table, "create")
        _php(db, table, "push", str(N_JOBS))
        with _general_log() as log, busy_neighbour() as sent:
            assert _php(*version, db, table, "work", str(N_JOBS + 5)).strip() == \
                f"worked {N_JOBS}"
            time.sleep(0.2)      # the server flushes the log line of the last statement
        assert sent[0] > 0
        with admin.cursor() as cur:
            cur.execute(f"select count(*) from {db}.{table}")
            assert cur.fetchone()[0] == 0
    finally:
        with admin.cursor() as cur:
            cur.execute(f"drop database if exists {db}")
        admin.close()
    # the log is server-wide: keep only the lines about our table for the SQL assertions
    raw = log.read_bytes()
    whole = raw.decode("utf-8", "replace").splitlines()
    text = "\n".join(ln for ln in whole if f"`{table}`" in ln)
    assert neighbour_was_logged(raw)  # the other client's lines are there
    proc = subprocess.run([sys.executable, "-m", "dbwatch", "audit", "--log", str(log),
                           "--format", "json"], capture_output=True, text=True, timeout=60,
                          cwd=ROOT, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    shutil.rmtree(log.parent, ignore_errors=True)
    return json.loads(proc.stdout), table, text


def _ours(doc: dict[str, Any], rule: str, table: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"]
            if f["rule"] == rule and f["evidence"].get("table") == table]


def test_laravel_skip_locked_claim_fetch_before_delete(uniq: str) -> None:
    doc, table, text = _laravel_run(uniq)
    # Laravel 8.69+ on MariaDB 10.6+: the claim carries SKIP LOCKED, as prepared by PDO
    assert "FOR UPDATE SKIP LOCKED" in text and " Prepare\t" in text
    qu401 = _ours(doc, "QU401", table)
    assert len(qu401) == 1, doc["findings"]
    ev = qu401[0]["evidence"]
    assert ev["count"] == N_JOBS and ev["key_columns"] == ["id"]
    assert qu401[0]["confidence"] == "high"
    assert _ours(doc, "QU402", table) == []
    assert doc["logs"][0]["format"] == "mysql-general"


def test_laravel_forced_old_version_plain_for_update(uniq: str) -> None:
    doc, table, text = _laravel_run(uniq, "--version=10.5.0-MariaDB")
    claims = [ln for ln in text.splitlines() if "Execute\t" in ln and "`queue` = " in ln]
    assert len(claims) == N_JOBS + 1
    assert all(ln.endswith("order by `id` asc limit 1 for update") for ln in claims), claims[0]
    assert len(_ours(doc, "QU401", table)) == 1, doc["findings"]
    qu402 = _ours(doc, "QU402", table)
    assert len(qu402) == 1, doc["findings"]
    # every pop claims with plain FOR UPDATE, the last one finding the queue empty
    assert qu402[0]["evidence"]["count"] == N_JOBS + 1


@contextlib.contextmanager
def _general_log_table() -> Iterator[str]:
    """The general log into mysql.general_log (log_output = TABLE, as on RDS); every old value
    put back. Yields the server's time at the start: the rows from then on are this test's."""
    admin = _admin()
    with admin.cursor() as cur:
        cur.execute("select @@global.general_log, @@global.log_output, now(6)")
        old_on, old_output, start = cur.fetchone()
    try:
        with admin.cursor() as cur:
            cur.execute("set global log_output = 'TABLE'")
            cur.execute("set global general_log = ON")
        yield str(start)
    finally:
        with admin.cursor() as cur:
            cur.execute("set global general_log = %s", ("ON" if old_on else "OFF",))
            cur.execute("set global log_output = %s", (old_output,))
        admin.close()


def _export(start: str, how: str) -> str:
    """mysql.general_log as the mariadb client prints it: -B (batch), -t (table), -E (\\G)."""
    sql = f"select * from mysql.general_log where event_time >= '{start}' order by event_time"
    p = subprocess.run(["mariadb", "-uroot", "-h127.0.0.1", how, "-e", sql],
                       capture_output=True, text=True, timeout=60, check=True)
    return p.stdout


@pytest.mark.skipif(shutil.which("mariadb") is None, reason="no mariadb client")
def test_laravel_general_log_as_a_table_in_every_shape_a_client_prints(uniq: str) -> None:
    """log_output = TABLE (RDS's default): the log is mysql.general_log, handed over as the
    client prints it or as the CSV engine's file. Each shape is read as the log file is."""
    db, table = f"dw_laravel_{uniq}", f"jobs_{uniq}"
    admin = _admin()
    try:
        with admin.cursor() as cur:
            cur.execute(f"create database {db}")
            cur.execute("select @@datadir")
            datadir = Path(cur.fetchone()[0])
        _php(db, table, "create")
        _php(db, table, "push", str(N_JOBS))
        with _general_log_table() as start, busy_neighbour():
            assert _php(db, table, "work", str(N_JOBS + 5)).strip() == f"worked {N_JOBS}"
        shapes = {how: _export(start, how) for how in ("-B", "-t", "-E")}
        csv = datadir / "mysql" / "general_log.CSV"
        if csv.is_file():   # the CSV engine's file: its rows from the start on
            shapes["csv"] = "".join(ln for ln in csv.read_text(errors="replace")
                                    .splitlines(keepends=True) if ln[1:27] >= start[:26])
    finally:
        with admin.cursor() as cur:
            cur.execute(f"drop database if exists {db}")
        admin.close()
    assert "csv" in shapes, f"no {csv}"
    d = Path(tempfile.mkdtemp(prefix="dw-laravel-table-"))
    try:
        for how, text in shapes.items():
            assert f"`{table}`" in text and "Init DB" in text, how  # the other client too
            p = d / f"general_log{how}.txt"
            p.write_text(text)
            proc = subprocess.run([sys.executable, "-m", "dbwatch", "audit", "--log", str(p),
                                   "--format", "json"], capture_output=True, text=True,
                                  timeout=60, cwd=ROOT, check=False)
            assert proc.returncode in (0, 1), (how, proc.stderr)
            doc = json.loads(proc.stdout)
            assert doc["logs"][0]["format"] == "mysql-general-table", how
            assert doc["logs"][0]["unreadable_lines"] == 0, (how, proc.stderr)
            qu401 = _ours(doc, "QU401", table)
            assert len(qu401) == 1 and qu401[0]["evidence"]["count"] == N_JOBS, (how, qu401)
            assert _ours(doc, "QU402", table) == [], how
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.skipif(shutil.which("mariadb") is None, reason="no mariadb client")
def test_general_log_table_rows_with_newlines_tabs_quotes_and_bars(uniq: str) -> None:
    """Statements spread over lines, with tabs, quotes and bars, as each shape really prints
    them: rows of general_log's own columns in a scratch table (InnoDB for the client's
    shapes, the CSV engine for its file), printed by the mariadb client."""
    db = f"dw_glt_{uniq}"
    cols = ("event_time timestamp(6) NOT NULL, user_host mediumtext NOT NULL, thread_id bigint "
            "unsigned NOT NULL, server_id int unsigned NOT NULL, command_type varchar(64) NOT "
            "NULL, argument mediumtext NOT NULL")
    rows = [("Connect", "app@localhost on app using TCP/IP"), ("Query", "START TRANSACTION"),
            ("Query", "select *\nfrom `jobs`\twhere `id` = 7\n  limit 1 for update"),
            ("Query", 'delete from `jobs` -- a "quoted" | note\nwhere `id` = 7'),
            ("Query", "COMMIT"), ("Quit", "")]
    admin = _admin()
    shapes: dict[str, str] = {}
    try:
        with admin.cursor() as cur:
            cur.execute(f"create database {db}")
            cur.execute("select @@datadir")
            datadir = Path(cur.fetchone()[0])
            for name, engine in (("t", "InnoDB"), ("c", "CSV")):
                cur.execute(f"create table {db}.{name} ({cols}) engine={engine}")
                for i, (cmd, arg) in enumerate(rows):
                    cur.execute(f"insert into {db}.{name} values "
                                "(%s, 'app[app] @ localhost []', 11, 1, %s, %s)",
                                (f"2026-11-27 10:00:00.{i:06d}", cmd, arg))
            cur.execute(f"flush tables {db}.c")
        for how in ("-B", "-t", "-E"):
            shapes[how] = subprocess.run(
                ["mariadb", "-uroot", "-h127.0.0.1", how, "-e", f"select * from {db}.t"],
                capture_output=True, text=True, timeout=60, check=True).stdout
        shapes["csv"] = (datadir / db / "c.CSV").read_text()
    finally:
        with admin.cursor() as cur:
            cur.execute(f"drop database if exists {db}")
        admin.close()
    assert "\\n" in shapes["-B"] and "\n  limit 1" in shapes["-t"] + shapes["-E"]
    assert '\\"quoted\\"' in shapes["csv"] or '""quoted""' in shapes["csv"], shapes["csv"]
    d = Path(tempfile.mkdtemp(prefix="dw-glt-"))
    try:
        for how, text in shapes.items():
            p = d / f"rows{how}.txt"
            p.write_text(text)
            proc = subprocess.run([sys.executable, "-m", "dbwatch", "audit", "--log", str(p),
                                   "--format", "json"], capture_output=True, text=True,
                                  timeout=60, cwd=ROOT, check=False)
            doc = json.loads(proc.stdout)
            assert doc["logs"][0]["format"] == "mysql-general-table", (how, text)
            assert doc["logs"][0]["statements"] == 4, (how, doc["logs"], text)
            assert doc["logs"][0]["unreadable_lines"] == 0, (how, text)
            (f,) = [f for f in doc["findings"] if f["rule"] == "QU401"]
            assert f["evidence"]["count"] == 1, (how, f)
            assert '"quoted" | note' in f["evidence"]["example"]["delete"], (how, f)
    finally:
        shutil.rmtree(d, ignore_errors=True)
