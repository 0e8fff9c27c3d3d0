"""Name the culprit on the real servers (issue 23): a tagged idle transaction is named by its
tags, its locked relations and write state (PostgreSQL) or its statements back to BEGIN
(MariaDB with performance_schema), the daemon remembers what it ran when young, the root of a
lock chain is described, a deadlock's tagged participant is named, and an untagged session
gets nothing invented."""
from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pymysql
import pytest
from conftest import PG_URL

sys.path.insert(0, str(Path(__file__).parent))
import mariadb_instance  # noqa: E402
from culprit_audit import audit, findings_for, origin, txn, wait_until  # noqa: E402

from dbwatch.probes import ProbeCache  # noqa: E402

TAGGED = "/*application:Shop,job:ReindexCatalog*/"


def _idle_for(admin: Any, pid: int, seconds: float = 1.2) -> bool:
    row = admin.execute(
        "SELECT state = 'idle in transaction' AND now() - state_change > make_interval(secs => %s)"
        " AND now() - xact_start > make_interval(secs => %s) FROM pg_stat_activity WHERE pid = %s",
        (seconds, seconds, pid)).fetchone()
    return bool(row and row[0])


def _waiting(admin: Any, pid: int) -> bool:
    row = admin.execute("SELECT now() - query_start > interval '1.2 s' FROM pg_stat_activity "
                        "WHERE pid = %s AND wait_event_type = 'Lock'", (pid,)).fetchone()
    return bool(row and row[0])


@pytest.fixture
def pg_table(pg_admin: Any, uniq: str) -> Iterator[str]:
    table = f"culprit_{uniq}"
    pg_admin.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, s text)")
    pg_admin.execute(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b')")
    yield table
    pg_admin.execute(f"DROP TABLE IF EXISTS {table}")


def test_pg_tagged_idle_transaction_named_with_locks_and_first_statement(
        pg_admin: Any, pg_table: str) -> None:
    job = psycopg.connect(PG_URL)
    plain = psycopg.connect(PG_URL)
    try:
        job.execute(f"SELECT * FROM {pg_table} WHERE id = 1 FOR UPDATE {TAGGED}")
        plain.execute(f"SELECT s FROM {pg_table} WHERE id = 2")
        wait_until(lambda: _idle_for(pg_admin, job.info.backend_pid)
                   and _idle_for(pg_admin, plain.info.backend_pid))
        cache = ProbeCache()
        audit(PG_URL, ("PG002",), cache)  # cycle 1: the daemon sees the tagged statement
        job.execute(f"SELECT count(*) FROM {pg_table}")  # later, untagged
        wait_until(lambda: _idle_for(pg_admin, job.info.backend_pid))
        res = audit(PG_URL, ("PG002",), cache)  # cycle 2
        (f,) = findings_for(res, "pid", job.info.backend_pid)
        o, t = origin(f), txn(f)
        assert o["application"] == "Shop" and o["job"] == "ReindexCatalog"
        assert o["phrase"] == "Shop, job ReindexCatalog" and "Shop, job ReindexCatalog" in f.summary
        assert t["first_statement"].startswith(f"SELECT * FROM {pg_table} WHERE id = 1 FOR UPDATE")
        assert [s["query"] for s in t["statements"]][-1] == f"SELECT count(*) FROM {pg_table}"
        assert t["wrote"] is True  # FOR UPDATE takes an xid
        locks = {(lk["relation"], lk["mode"]) for lk in t["locks"]}
        assert (f"public.{pg_table}", "RowShareLock") in locks
        assert "ReindexCatalog (Shop) leaves its transaction open" in f.fix
        # the untagged session: nothing invented, the reasons said
        (g,) = findings_for(res, "pid", plain.info.backend_pid)
        og = origin(g)
        assert "application" not in og and "phrase" not in og and "job" not in og
        assert any("framework tags" in u for u in og["unknown"])
        assert txn(g)["wrote"] is False
        assert {lk["relation"] for lk in txn(g)["locks"]} == {f"public.{pg_table}"}
        assert "In the application" not in g.fix
    finally:
        job.close()
        plain.close()


def test_pg101_root_blocker_described(pg_admin: Any, pg_table: str) -> None:
    root = psycopg.connect(PG_URL)
    waiter = psycopg.connect(PG_URL, autocommit=True)
    root.execute(f"UPDATE {pg_table} SET s = 'x' WHERE id = 1 {TAGGED}")
    wait_until(lambda: _idle_for(pg_admin, root.info.backend_pid))
    t = threading.Thread(target=lambda: waiter.execute(
        f"UPDATE {pg_table} SET s = 'y' WHERE id = 1"), daemon=True)
    t.start()
    try:
        wait_until(lambda: _waiting(pg_admin, waiter.info.backend_pid))
        res = audit(PG_URL, ("PG101",))
        (f,) = [f for f in res.evaluation.findings if f.evidence.get("root_pid")
                == root.info.backend_pid]
        assert f" — pid {root.info.backend_pid}: Shop, job ReindexCatalog" in f.summary
        assert "idle" in f.summary.rsplit(" — ", 1)[1]
        assert origin(f)["job"] == "ReindexCatalog"
    finally:
        root.rollback()
        t.join(10)
        root.close()
        waiter.close()


# --- MariaDB -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pfs() -> Iterator[mariadb_instance.MariaDbInstance]:
    if not mariadb_instance.available():
        pytest.skip("no mariadbd here for a performance_schema instance")
    with mariadb_instance.MariaDbInstance.create(
            mariadb_instance.PFS_OPTIONS
            + ["--performance-schema-consumer-events-transactions-current=ON",
               "--performance-schema-instrument=transaction=ON"]) as db:
        db.query("CREATE TABLE orders (id int PRIMARY KEY, s text) ENGINE=InnoDB")
        db.query("INSERT INTO orders VALUES (1, 'a'), (2, 'b')")
        yield db


def _sleeping(db: Any, thread: int, seconds: float = 1.2) -> bool:
    rows = db.query("SELECT t.trx_started <= NOW() - INTERVAL 2 SECOND AND p.COMMAND = 'Sleep'"
                    " FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p"
                    " ON p.ID = t.trx_mysql_thread_id WHERE p.ID = %s", (thread,))
    return bool(rows and rows[0][0])


def test_mariadb_first_statement_and_connection_attributes(
        pfs: mariadb_instance.MariaDbInstance) -> None:
    app = pfs.connect(autocommit=True, program_name="shop-worker")
    blocked = pfs.connect(autocommit=True)
    cur = app.cursor()
    cur.execute("SELECT 1")
    cur.execute("BEGIN")
    first = f"SELECT * FROM orders WHERE id = 1 FOR UPDATE {TAGGED}"
    cur.execute(first)
    cur.execute("UPDATE orders SET s = 'x' WHERE id = 2")
    t = threading.Thread(target=lambda: _quiet(blocked, "UPDATE orders SET s = 'z' WHERE id = 1"),
                         daemon=True)
    t.start()
    try:
        wait_until(lambda: _sleeping(pfs, app.thread_id()))
        res = audit(pfs.url(), ("MY002", "MY101"))
        (f,) = [f for f in findings_for(res, "thread_id", app.thread_id()) if f.rule == "MY002"]
        o, tx = origin(f), txn(f)
        assert tx["first_statement"] == first
        assert [s["sql_text"] for s in tx["statements"]] == [
            first, "UPDATE orders SET s = 'x' WHERE id = 2"]
        assert tx["statements_source"].startswith("events_transactions_current")
        assert o["phrase"] == "Shop, job ReindexCatalog"
        assert o["connection_attributes"]["program_name"] == "shop-worker"
        assert o["connection_attributes"]["_client_name"] == "pymysql"
        assert f.evidence["application"] == "Shop"
        assert "opened with `SELECT * FROM orders WHERE id = 1 FOR UPDATE`" in f.summary
        chain = [f for f in res.evaluation.findings if f.rule == "MY101"
                 and f.evidence.get("root_thread_id") == app.thread_id()]
        assert chain and f" — thread {app.thread_id()}: Shop, job ReindexCatalog" in chain[0].summary
    finally:
        app.rollback()
        t.join(10)
        app.close()
        blocked.close()


def _quiet(conn: Any, sql: str) -> None:
    try:
        conn.cursor().execute(sql)
    except pymysql.MySQLError:
        pass  # timed out or rolled back at teardown


def test_mariadb_performance_schema_off_is_said_and_user_is_no_application(
        my_admin: Any, my_url: str, uniq: str) -> None:
    """The shared server runs with performance_schema OFF: the statements are unknown with
    the setting that fixes it, and the user name never becomes the application."""
    user = f"culprit_{uniq}"
    my_admin.cursor().execute(f"CREATE USER '{user}'@'%%' IDENTIFIED BY 'pw-{uniq}'")
    my_admin.cursor().execute(f"GRANT ALL ON test.* TO '{user}'@'%%'")
    table = f"culprit_{uniq}"
    my_admin.cursor().execute(f"CREATE TABLE {table} (id int PRIMARY KEY) ENGINE=InnoDB")
    my_admin.cursor().execute(f"INSERT INTO {table} VALUES (1)")
    conn = pymysql.connect(host="127.0.0.1", port=3306, user=user, password=f"pw-{uniq}",
                           database="test", autocommit=False)
    try:
        pfs_on = my_admin.cursor()
        pfs_on.execute("SELECT @@performance_schema")
        if pfs_on.fetchone()[0]:
            pytest.skip("the shared server has performance_schema ON")
        conn.cursor().execute(f"SELECT * FROM {table} FOR UPDATE")
        wait_until(lambda: _shared_sleeping(my_admin, conn.thread_id()))
        res = audit(my_url, ("MY002",))
        (f,) = findings_for(res, "thread_id", conn.thread_id())
        assert f.evidence["application"] is None and f.evidence["user"] == user
        o, tx = origin(f), txn(f)
        assert "application" not in o and "phrase" not in o and user not in str(o)
        assert tx["first_statement"] is None
        assert "performance_schema is OFF" in tx["statements_unknown"]
        assert "performance_schema = ON" in tx["statements_unknown"]
        assert any("connection attributes" in u for u in o["unknown"])
    finally:
        conn.rollback()
        conn.close()
        my_admin.cursor().execute(f"DROP TABLE {table}")
        my_admin.cursor().execute(f"DROP USER '{user}'@'%%'")


def _shared_sleeping(admin: Any, thread: int) -> bool:
    cur = admin.cursor()
    cur.execute("SELECT t.trx_started <= NOW() - INTERVAL 2 SECOND AND p.COMMAND = 'Sleep'"
                " FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p"
                " ON p.ID = t.trx_mysql_thread_id WHERE p.ID = %s", (thread,))
    row = cur.fetchone()
    return bool(row and row[0])


def test_mariadb_deadlock_participants_named_from_their_tags(
        pfs: mariadb_instance.MariaDbInstance) -> None:
    """A real opposite-order deadlock between a tagged web request and an untagged session:
    MY102 names the tagged participant, and only that one."""
    pfs.query("CREATE TABLE IF NOT EXISTS dl (id int PRIMARY KEY, v int) ENGINE=InnoDB")
    pfs.query("REPLACE INTO dl VALUES (1, 0), (2, 0)")
    web, batch = pfs.connect(autocommit=False), pfs.connect(autocommit=False)
    tag = "/*application='Shop',controller='orders',action='create'*/"
    outcome: dict[str, object] = {}
    try:
        web.cursor().execute(f"UPDATE dl SET v = v + 1 WHERE id = 1 {tag}")
        batch.cursor().execute("UPDATE dl SET v = v + 1 WHERE id = 2")

        def second(name: str, conn: Any, sql: str) -> None:
            try:
                conn.cursor().execute(sql)
                outcome[name] = "ok"
            except pymysql.MySQLError as exc:
                outcome[name] = exc.args[0]

        t = threading.Thread(target=second,
                             args=("batch", batch, "UPDATE dl SET v = v + 1 WHERE id = 1"))
        t.start()
        wait_until(lambda: pfs.query(
            "SELECT COUNT(*) FROM information_schema.INNODB_TRX "
            "WHERE trx_state = 'LOCK WAIT'")[0][0] >= 1)
        second("web", web, f"UPDATE dl SET v = v + 1 WHERE id = 2 {tag}")
        t.join(10)
    finally:
        web.rollback()
        batch.rollback()
        web.close()
        batch.close()
    assert 1213 in outcome.values(), outcome  # ER_LOCK_DEADLOCK
    res = audit(pfs.url(), ("MY102",))
    (f,) = [f for f in res.evaluation.findings if f.rule == "MY102"]
    parts = f.evidence["origin"]["participants"]  # type: ignore[index]
    assert sorted(str(p.get("phrase")) for p in parts) == ["None", "Shop orders#create"], parts
    assert "Shop orders#create" in f.summary
    dl = f.evidence["deadlock"]
    assert isinstance(dl, dict)
    assert sorted(str(t["origin"].get("phrase")) for t in dl["transactions"]) == [
        "None", "Shop orders#create"]
