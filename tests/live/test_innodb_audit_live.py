"""MY102 and MY201 through `dbwatch audit`, and `dbwatch deadlocks` on a live server."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pymysql
import pytest
from conftest import CORPUS
from schemas import load_json


def connect() -> pymysql.connections.Connection:
    return pymysql.connect(host="127.0.0.1", user="root", password="", database="test")


def dbwatch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dbwatch", *args], capture_output=True,
                          text=True, timeout=60)


def make_deadlock(table: str) -> int:
    """Two sessions update rows 1 and 2 in opposite order; returns the victim's thread id."""
    a, b = connect(), connect()
    victims: list[int] = []
    try:
        for c in (a, b):
            c.begin()
        a.cursor().execute(f"UPDATE {table} SET v = v + 1 WHERE id = 1")
        b.cursor().execute(f"UPDATE {table} SET v = v + 1 WHERE id = 2")

        def second(conn: pymysql.connections.Connection, row: int) -> None:
            try:
                conn.cursor().execute(f"UPDATE {table} SET v = v + 1 WHERE id = {row}")
                conn.commit()
            except pymysql.err.OperationalError as exc:
                if exc.args[0] == 1213:
                    victims.append(conn.thread_id())
                conn.rollback()
        t = threading.Thread(target=second, args=(a, 2))
        t.start()
        time.sleep(0.3)
        second(b, 1)
        t.join(10)
    finally:
        a.close()
        b.close()
    assert len(victims) == 1
    return victims[0]


def test_my102_reports_the_latest_deadlock(my_admin: pymysql.connections.Connection,
                                           uniq: str) -> None:
    table = f"dbw_dl_audit_{uniq}"
    cur = my_admin.cursor()
    cur.execute(f"CREATE TABLE {table} (id int primary key, v int) ENGINE=InnoDB")
    cur.execute(f"INSERT INTO {table} VALUES (1, 0), (2, 0)")
    try:
        for _ in range(3):    # another workload on the shared server may deadlock in between
            victim = make_deadlock(table)
            proc = dbwatch("audit", "mysql://root@127.0.0.1/test", "--select", "MY102",
                           "--format", "json")
            doc = load_json(proc.stdout, "audit")
            [f] = [f for f in doc["findings"] if f["rule"] == "MY102"]
            dl = f["evidence"]["deadlock"]
            if all(t["tables"] == [f"test.{table}"] for t in dl["transactions"]):
                break
        assert {t["thread_id"] for t in dl["transactions"] if t["victim"]} == {victim}
        assert all(t["tables"] == [f"test.{table}"] for t in dl["transactions"])
        assert f["evidence"]["diagnosis"]["pattern"] == "opposite-order-rows"
        assert f["evidence"]["diagnosis"]["rules"] == []      # not a queue problem
        assert proc.returncode == 1
        text = dbwatch("deadlocks", "mysql://root@127.0.0.1/test")
        assert "Deadlock Transactions" in text.stdout and "Deadlock Locks" in text.stdout
        assert table in text.stdout and "opposite-order-rows" in text.stdout
        js = load_json(dbwatch("deadlocks", "mysql://root@127.0.0.1/test", "--format", "json").stdout,
                       "deadlocks")
        assert js["deadlocks"][0]["victim"] in (1, 2)
    finally:
        cur.execute(f"DROP TABLE {table}")


def test_my201_names_the_oldest_transaction(tmp_path: Path) -> None:
    """MY201 names the server's oldest open transaction, whoever's: a throwaway MariaDB, so
    no older transaction of another test or user on the shared server can be the answer."""
    sys.path.insert(0, str(Path(__file__).parent))
    import mariadb_instance

    if not mariadb_instance.available():
        pytest.skip("no mariadbd here")
    with mariadb_instance.MariaDbInstance.create() as db:
        db.query("CREATE TABLE hll (id int primary key, v int) ENGINE=InnoDB")
        db.query("INSERT INTO hll VALUES (1, 0)")
        reader = db.connect()
        try:
            reader.cursor().execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            reader.cursor().execute("SELECT * FROM hll")
            with db.connect() as writer, writer.cursor() as cur:
                for _ in range(3000):  # each commit leaves undo that the open read view pins
                    cur.execute("UPDATE hll SET v = v + 1 WHERE id = 1")
            cfg = tmp_path / "c.toml"
            cfg.write_text('[rules.MY201]\nthresholds = { warning = "2000", critical = "10000000" }\n')
            proc = dbwatch("audit", db.url(), "--config", str(cfg), "--select", "MY201",
                           "--format", "json")
            [f] = load_json(proc.stdout, "audit")["findings"]
            assert f["evidence"]["history_list_length"] >= 2000
            assert f["evidence"]["oldest"]["thread_id"] == reader.thread_id()
            assert f"KILL {reader.thread_id()}" in f["fix"]
        finally:
            reader.close()


def test_deadlocks_from_saved_text(tmp_path: Path) -> None:
    sample = CORPUS / "innodb-status" / "mariadb-10.11__laravel-queue-index__delete-vs-claim.txt"
    if not sample.exists():
        pytest.skip(f"{sample.name}: external corpus not found ({CORPUS}; set DBWATCH_CORPUS)")
    js = load_json(dbwatch("deadlocks", "--file", str(sample), "--format", "json").stdout, "deadlocks")
    [dl] = js["deadlocks"]
    assert dl["diagnosis"]["rules"] == ["QU401"]
    assert [t["victim"] for t in dl["transactions"]] == [True, False]


def test_deadlocks_from_a_bad_file_are_never_all_clear(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.txt"
    garbage.write_bytes(b"\x00\xff not a status \n" * 100)
    out = dbwatch("deadlocks", "--file", str(garbage))  # issue 12.4: never "all clear"
    assert out.returncode == 3 and str(garbage) in out.stderr and "No deadlocks" not in out.stdout
    missing = dbwatch("deadlocks", "--error-log", str(tmp_path / "nope.log"))
    assert missing.returncode == 3 and "nope.log" in missing.stderr and "Traceback" not in missing.stderr


def test_daemon_records_deadlocks_for_history(my_admin: pymysql.connections.Connection,
                                              uniq: str, tmp_path: Path) -> None:
    """`watch --once` keeps the deadlock it saw; `deadlocks --history` lists it, deduplicated."""
    table = f"dbw_dl_hist_{uniq}"
    cur = my_admin.cursor()
    cur.execute(f"CREATE TABLE {table} (id int primary key, v int) ENGINE=InnoDB")
    cur.execute(f"INSERT INTO {table} VALUES (1, 0), (2, 0)")
    cfg, state = tmp_path / "w.toml", tmp_path / "state.db"
    cfg.write_text('[[targets]]\nname = "maria"\nurl = "mysql://root@127.0.0.1/test"\n')
    try:
        victim = make_deadlock(table)
        for _ in range(2):      # the same deadlock seen twice is stored once
            dbwatch("watch", "--config", str(cfg), "--state", str(state), "--once")
        js = load_json(dbwatch("deadlocks", "--history", "--state", str(state),
                                "--format", "json").stdout, "deadlocks")
        ours = [d for d in js["deadlocks"]
                if any(t["tables"] == [f"test.{table}"] for t in d["transactions"])]
        assert len(ours) == 1 and ours[0]["target"] == "maria"
        assert victim in {t["thread_id"] for t in ours[0]["transactions"] if t["victim"]}
        missing = dbwatch("deadlocks", "--history", "--state", str(tmp_path / "none.db"))
        assert missing.returncode == 3 and "no state database" in missing.stderr
    finally:
        cur.execute(f"DROP TABLE {table}")
