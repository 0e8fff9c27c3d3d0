"""Causes and parity on the real servers (issue 12.6, 12.7): a blocked MariaDB transaction under
MY001 names its blocker; an active long PostgreSQL query under PG001 gets statement_timeout;
a table with autovacuum_enabled = false under PG202; two horizon holders ranked; watch --once
honours a target's retry_after. Each test asserts only about the sessions and objects it made."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pymysql
import pytest
from conftest import PG_URL


def dbwatch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dbwatch", *args], capture_output=True,
                          text=True, timeout=120)


def audit(url: str, config: Path, select: str) -> list[dict[str, Any]]:
    proc = dbwatch("audit", url, "--config", str(config), "--select", select, "--format", "json")
    assert proc.stdout, proc.stderr
    return list(json.loads(proc.stdout)["findings"])


def config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "dbwatch.toml"
    path.write_text(text)
    return path


def my_connect(db: str = "test") -> Any:
    return pymysql.connect(host="127.0.0.1", port=3306, user="root", password="", database=db,
                           autocommit=False)


def test_my001_on_a_blocked_transaction_names_the_blocker(uniq: str, tmp_path: Path,
                                                          my_url: str) -> None:
    table = f"causes_{uniq}"
    admin = my_connect()
    admin.cursor().execute(f"CREATE TABLE {table} (id int primary key, v int) ENGINE=InnoDB")
    admin.cursor().execute(f"INSERT INTO {table} VALUES (1, 0)")
    admin.commit()
    holder, waiter = my_connect(), my_connect()
    holder_id, waiter_id = holder.thread_id(), waiter.thread_id()
    holder.cursor().execute(f"UPDATE {table} SET v = 1 WHERE id = 1")   # holds the row lock
    waiter.cursor().execute("SET SESSION innodb_lock_wait_timeout = 30")

    def wait() -> None:
        try:
            waiter.cursor().execute(f"UPDATE {table} SET v = 2 WHERE id = 1")
        except pymysql.MySQLError:
            pass  # killed or timed out at teardown
    t = threading.Thread(target=wait, daemon=True)
    t.start()
    try:
        time.sleep(2.5)
        cfg = config(tmp_path, '[rules.MY001]\nthresholds = { warning = "1s" }\n')
        found = {f["subject"]: f for f in audit(my_url, cfg, "MY001")}
        blocked = found[f"thread {waiter_id}"]
        assert f"KILL {holder_id};" in blocked["fix"], blocked
        assert f"KILL {waiter_id}" not in blocked["fix"]
        assert f"blocked by thread {holder_id}" in blocked["summary"]
        assert blocked["evidence"]["root_thread_id"] == holder_id
        assert f"KILL {holder_id};" in found[f"thread {holder_id}"]["fix"]
    finally:
        holder.rollback()
        t.join(10)
        waiter.rollback()
        for c in (holder, waiter):
            c.close()
        admin.cursor().execute(f"DROP TABLE {table}")
        admin.close()


@pytest.fixture
def pg_sleeper() -> Iterator[int]:
    conn = psycopg.connect(PG_URL, autocommit=True, application_name="causes-report")
    pid = conn.info.backend_pid

    def sleep() -> None:
        try:
            conn.execute("SELECT pg_sleep(20)")
        except psycopg.Error:
            pass
    t = threading.Thread(target=sleep, daemon=True)
    t.start()
    time.sleep(2.5)
    yield pid
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        admin.execute("SELECT pg_cancel_backend(%s)", (pid,))
    t.join(10)
    conn.close()


def test_pg001_active_long_query_gets_statement_timeout(pg_sleeper: int, tmp_path: Path,
                                                        pg_url: str) -> None:
    cfg = config(tmp_path, '[rules.PG001]\nthresholds = { warning = "1s" }\n')
    found = {f["subject"]: f for f in audit(pg_url, cfg, "PG001")}
    f = found[f"pid {pg_sleeper}"]
    assert "statement_timeout" in f["fix"] and "idle_in_transaction" not in f["fix"]
    assert 'ALTER ROLE "postgres" IN DATABASE "test" SET statement_timeout' in f["fix"]
    assert f"pg_cancel_backend({pg_sleeper})" in f["fix"]


def _flush_stats(conn: psycopg.Connection[Any]) -> None:
    conn.execute("SELECT pg_stat_force_next_flush()")


def test_pg202_names_autovacuum_disabled_on_the_table(uniq: str, tmp_path: Path,
                                                      own_pg_url: str) -> None:
    # a database of its own: a session in the shared `test` holding the horizon would make
    # the finding name that holder instead of the table's autovacuum
    pg_url = own_pg_url
    table = f"av_jobs_{uniq}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        server_off = admin.execute("SELECT current_setting('autovacuum')").fetchone()[0] == "off"
        admin.execute(f"CREATE TABLE {table} (id int) WITH (autovacuum_enabled = false)")
        try:
            # a queue-named table needs 5,000 dead tuples before PG202 speaks without a holder
            admin.execute(f"INSERT INTO {table} SELECT generate_series(1, 6000)")
            admin.execute(f"DELETE FROM {table}")
            _flush_stats(admin)
            time.sleep(1.2)
            cfg = config(tmp_path, "")
            found = {f["subject"]: f for f in audit(pg_url, cfg, "PG202")}
        finally:
            admin.execute(f"DROP TABLE {table}")
    f = found[f"table {pg_url.rsplit('/', 1)[1]}.public.{table}"]
    assert "autovacuum_enabled = false" in f["summary"]
    assert "not caught up" not in f["summary"] and "scale_factor" not in f["fix"]
    assert f'ALTER TABLE "public"."{table}" SET (autovacuum_enabled = on);' in f["fix"]
    assert ("autovacuum = off" in f["summary"]) == server_off


def test_two_horizon_holders_are_ranked(uniq: str, tmp_path: Path, pg_url: str) -> None:
    old = psycopg.connect(PG_URL, application_name=f"old-{uniq}")
    old.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    old.execute("SELECT 1")                     # snapshot taken: pins backend_xmin
    with psycopg.connect(PG_URL, autocommit=True) as w:
        w.execute("SELECT txid_current()")      # the horizon moves on between the two
    time.sleep(1.1)
    young = psycopg.connect(PG_URL, application_name=f"young-{uniq}")
    young.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    young.execute("SELECT 1")
    old_pid, young_pid = old.info.backend_pid, young.info.backend_pid
    try:
        time.sleep(1.2)
        cfg = config(tmp_path, '[rules.PG201]\nthresholds = { warning = "1s" }\n')
        found = {f["subject"]: f for f in audit(pg_url, cfg, "PG201")}
    finally:
        old.close()
        young.close()
    first = found[f"pid {old_pid}"]
    pids = [h["pid"] for h in first["evidence"]["holders_ranked"]]
    assert old_pid in pids and young_pid in pids
    assert pids.index(old_pid) < pids.index(young_pid)
    assert "holder" in first["summary"] and " of " in first["summary"]
    assert "next holder" in first["fix"]


def test_watch_once_honours_the_targets_retry_after(uniq: str, tmp_path: Path) -> None:
    db = f"causes_{uniq}"
    admin = my_connect()
    cur = admin.cursor()
    cur.execute(f"CREATE DATABASE {db}")
    try:
        cur.execute(f"CREATE TABLE {db}.jobs (id bigint unsigned auto_increment primary key,"
                    " queue varchar(255) not null, payload longtext not null,"
                    " attempts tinyint unsigned not null, reserved_at int unsigned,"
                    " available_at int unsigned not null, created_at int unsigned not null,"
                    " KEY jobs_queue_index (queue))")
        now = int(time.time())
        cur.execute(f"INSERT INTO {db}.jobs (queue, payload, attempts, reserved_at, available_at,"
                    " created_at) VALUES ('default', '{}', 1, %s, %s, %s)",
                    (now - 60, now - 120, now - 120))
        admin.commit()
        text = (f'[[targets]]\nname = "q"\nurl = "mysql://root@127.0.0.1:3306/{db}"\n'
                'retry_after = "30s"\n')
        state = tmp_path / "state.db"
        proc = dbwatch("watch", "--once", "--config", str(config(tmp_path, text)),
                       "--state", str(state))
    finally:
        cur.execute(f"DROP DATABASE {db}")
        admin.close()
    # the QU002 warning at least; other schemas on the shared server may add a DW001 (exit 3)
    assert proc.returncode in (1, 2, 3) and "Traceback" not in proc.stderr, proc.stderr
    import sqlite3
    with sqlite3.connect(state) as st:
        rows = [json.loads(d) for (d,) in st.execute(
            "SELECT data FROM findings WHERE rule = 'QU002'")]
    ours = [r for r in rows if db in json.dumps(r)]
    assert ours, rows                       # 60 s > the target's 30 s (the rule's default: 90 s)
    assert ours[0]["evidence"]["retry_after_source"] == "target retry_after"
    assert ours[0]["evidence"]["retry_after_seconds"] == 30.0
