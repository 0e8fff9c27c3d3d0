"""Live deadlocks on the local MariaDB: real sessions in threads/processes, parsed and diagnosed.

Set DBWATCH_CAPTURE_DIR to keep the captured status texts and error-log excerpts.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pymysql = pytest.importorskip("pymysql")

from dbwatch.deadlocks.diagnosis import diagnose
from dbwatch.parsers.errorlog import iter_deadlocks
from dbwatch.parsers.innodb_deadlock import Deadlock
from dbwatch.parsers.innodb_status import parse_status

DSN = {"host": os.environ.get("DBWATCH_TEST_MYSQL_HOST", "127.0.0.1"),
       "port": int(os.environ.get("DBWATCH_TEST_MYSQL_PORT", "3306")),
       "user": "root", "password": "", "database": "test"}
DEADLOCK = 1213
CAPTURE = os.environ.get("DBWATCH_CAPTURE_DIR")


def connect(**kw: Any) -> Any:
    kw.setdefault("autocommit", False)
    return pymysql.connect(**DSN, **kw)


def _server_ok() -> bool:
    try:
        connect(connect_timeout=2).close()
        return True
    except pymysql.err.MySQLError:
        return False


pytestmark = pytest.mark.skipif(not _server_ok(), reason="no MariaDB at 127.0.0.1:3306")


def _save(name: str, text: str) -> None:
    if CAPTURE:
        Path(CAPTURE).mkdir(parents=True, exist_ok=True)
        (Path(CAPTURE) / name).write_text(text)


def status_text(cur: Any) -> str:
    cur.execute("SHOW ENGINE INNODB STATUS")
    return str(cur.fetchone()[2])


@pytest.fixture
def table() -> Iterator[str]:
    name = f"dbw_dl_{uuid.uuid4().hex[:8]}"
    yield name
    with connect() as c, c.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS `{name}`")
        cur.execute(f"DROP TABLE IF EXISTS `{name}_jobs`")
        c.commit()


# --- a deterministic two-row opposite-order deadlock ---------------------------------

def opposite_order(table: str) -> dict[str, Any]:
    """Session A locks row 1 then 2, session B row 2 then 1; returns who was who."""
    with connect() as c, c.cursor() as cur:
        cur.execute(f"CREATE TABLE `{table}` (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
        cur.execute(f"INSERT INTO `{table}` VALUES (1, 0), (2, 0)")
        c.commit()
    a, b = connect(), connect()
    out: dict[str, Any] = {}
    try:
        ca, cb = a.cursor(), b.cursor()
        for name, cur, row in (("a", ca, 1), ("b", cb, 2)):
            cur.execute(f"UPDATE `{table}` SET v = v + 1 WHERE id = {row}")
            for _ in range(20):     # I_S.INNODB_TRX: a cache, refreshed after 0.1 s unread
                cur.execute("SELECT CONNECTION_ID(), (SELECT trx_id FROM information_schema"
                            ".innodb_trx WHERE trx_mysql_thread_id = CONNECTION_ID())")
                out[name + "_thread"], out[name + "_trx"] = cur.fetchone()
                if out[name + "_trx"] is not None:
                    break
                time.sleep(0.15)

        def second(name: str, cur: Any, row: int) -> None:
            try:
                cur.execute(f"UPDATE `{table}` SET v = v + 1 WHERE id = {row}")
                out[name] = "ok"
            except pymysql.err.OperationalError as exc:
                out[name] = exc.args[0]

        t = threading.Thread(target=second, args=("b", cb, 1))
        t.start()
        time.sleep(0.3)                 # B is now waiting for row 1
        second("a", ca, 2)
        t.join(10)
        a.rollback()
        b.rollback()
    finally:
        a.close()
        b.close()
    return out


def test_opposite_order_deadlock_parsed_and_not_a_queue_problem(table: str) -> None:
    out = opposite_order(table)
    assert DEADLOCK in (out["a"], out["b"]), out
    loser = "a" if out["a"] == DEADLOCK else "b"
    with connect() as c, c.cursor() as cur:
        text = status_text(cur)
    _save("mariadb-opposite-order.txt", text)
    dl = parse_status(text).deadlock
    assert dl is not None
    by_thread = {t.thread_id: t for t in dl.transactions}
    assert set(by_thread) == {out["a_thread"], out["b_thread"]}
    assert by_thread[out["a_thread"]].trx_id == str(out["a_trx"])
    assert by_thread[out["b_thread"]].trx_id == str(out["b_trx"])
    victim = dl.trx(dl.victim or 0)
    assert victim is not None and victim.thread_id == out[loser + "_thread"]
    for t in dl.transactions:
        assert t.tables == (f"test.{table}",)
        assert t.user == "root" and t.undo_entries == 1 and t.row_locks == 2
    assert {lk.index for lk in dl.locks} == {"PRIMARY"}
    assert all(lk.special == "rec but not gap" and lk.mode == "X" for lk in dl.locks)
    diag = diagnose(dl)
    assert diag.pattern == "opposite-order-rows"
    assert not diag.is_queue_problem and diag.rules == ()


# --- the Laravel 5.x database-queue worker loop ---------------------------------------

def make_jobs(table: str, index: str, jobs: int, inflight: int = 0) -> None:
    """A Laravel 5.x jobs table; `inflight` rows are reserved by (imaginary) busy workers."""
    with connect() as c, c.cursor() as cur:
        cur.execute(f"""CREATE TABLE `{table}` (
            id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(191) NOT NULL,
            payload LONGTEXT NOT NULL, attempts TINYINT UNSIGNED NOT NULL,
            reserved_at INT UNSIGNED NULL, available_at INT UNSIGNED NOT NULL,
            created_at INT UNSIGNED NOT NULL) ENGINE=InnoDB""")
        cols = "(queue, reserved_at)" if index == "legacy" else "(queue)"
        name = f"{table}_queue_reserved_at_index" if index == "legacy" else f"{table}_queue_index"
        cur.execute(f"CREATE INDEX `{name}` ON `{table}` {cols}")
        now = int(time.time()) - 5
        rows = [("default", json.dumps({"job": "x", "n": i}), 1, now + 3600, now, now)
                for i in range(inflight)]
        rows += [("default", json.dumps({"job": "x", "n": i}), 0, None, now, now) for i in range(jobs)]
        cur.executemany(f"INSERT INTO `{table}` (queue, payload, attempts, reserved_at,"
                        " available_at, created_at) VALUES (%s,%s,%s,%s,%s,%s)", rows)
        c.commit()


def worker(table: str, seconds: float, results: Any, delete: str = "fetch",
           hint: str = "") -> None:
    """One `queue:work` process: claim + reserve, then fetch-before-delete (or a plain delete)."""
    deadlocks: list[tuple[str, int]] = []
    me, done = 0, 0
    try:
        conn = connect()
        cur = conn.cursor()
        cur.execute("SELECT CONNECTION_ID()")
        me = cur.fetchone()[0]
        done = _work(conn, cur, me, table, seconds, deadlocks, delete, hint)
        conn.close()
    finally:
        results.put({"thread": me, "done": done, "deadlocks": deadlocks})


def _work(conn: Any, cur: Any, me: int, table: str, seconds: float,
          deadlocks: list[tuple[str, int]], delete: str, hint: str) -> int:
    done = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        now = int(time.time())
        try:
            cur.execute(f"SELECT * FROM `{table}`{hint} WHERE `queue` = %s AND ((`reserved_at` IS NULL"
                        " and `available_at` <= %s) OR (`reserved_at` <= %s)) ORDER BY `id`"
                        " ASC limit 1 FOR UPDATE", ("default", now, now - 90))
            row = cur.fetchone()
            if row is None:
                conn.commit()
                break
            cur.execute(f"UPDATE `{table}` SET `reserved_at` = %s, `attempts` = `attempts` + 1"
                        " WHERE `id` = %s", (now, row[0]))
            conn.commit()
        except pymysql.err.OperationalError as exc:
            conn.rollback()
            if exc.args[0] == DEADLOCK:
                deadlocks.append(("claim", me))
            continue
        try:
            if delete == "fetch":
                cur.execute(f"SELECT * FROM `{table}` WHERE `id` = %s limit 1 FOR UPDATE",
                            (row[0],))
            cur.execute(f"DELETE FROM `{table}` WHERE `id` = %s", (row[0],))
            conn.commit()
            done += 1
        except pymysql.err.OperationalError as exc:
            conn.rollback()
            if exc.args[0] == DEADLOCK:
                deadlocks.append(("delete", me))
    return done


def run_workers(table: str, workers: int, seconds: float, poll: bool = True,
                hint: str = "") -> tuple[list[dict[str, Any]], dict[Any, tuple[Deadlock, str]]]:
    """Run the workers; meanwhile poll SHOW ENGINE INNODB STATUS for new deadlocks.

    `hint` goes to every other worker's claim, e.g. " FORCE INDEX (...)": the plan
    MariaDB picks by itself once few jobs are claimable (range + filesort on the
    legacy index, as in the corpus capture), mixed with the primary-key plan.
    """
    ctx = mp.get_context("fork")
    results = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(table, seconds, results, "fetch",
                                              hint if i % 2 else ""))
             for i in range(workers)]
    for p in procs:
        p.start()
    seen: dict[Any, tuple[Deadlock, str]] = {}
    try:
        with connect(autocommit=True) as c, c.cursor() as cur:
            while poll and any(p.is_alive() for p in procs):
                text = status_text(cur)
                dl = parse_status(text).deadlock
                if dl is not None and any(table in t for x in dl.transactions for t in x.tables):
                    seen.setdefault(dl.identity, (dl, text))
                time.sleep(0.05)
        out = [results.get(timeout=seconds + 30) for _ in procs]
    finally:
        for p in procs:
            p.join(seconds + 10)
            if p.is_alive():
                p.terminate()
    return out, seen


@pytest.mark.parametrize("index,pattern,rule", [
    ("queue", "queue-claim-vs-delete", "QU401"),
    ("legacy", "queue-legacy-index", "QU301"),
])
def test_laravel_worker_loop_deadlocks_are_diagnosed(table: str, index: str, pattern: str,
                                                     rule: str) -> None:
    jobs = f"{table}_jobs"
    make_jobs(jobs, index, 3000)
    # MariaDB starts on the primary-key plan and switches to the queue index as the
    # table drains (both corpus captures show the index plan); forcing it on half the
    # workers makes the mix, and so the deadlock, happen on every run.
    suffix = "queue_reserved_at_index" if index == "legacy" else "queue_index"
    hint = f" FORCE INDEX (`{jobs}_{suffix}`)"
    results, seen = run_workers(jobs, workers=16, seconds=8, hint=hint)
    losers = {thread for r in results for _kind, thread in r["deadlocks"]}
    assert losers, "the worker loop produced no deadlock"
    assert seen, "no deadlock captured by polling"
    patterns = set()
    for dl, text in seen.values():
        victim = dl.trx(dl.victim or 0)
        assert victim is not None and victim.thread_id in losers
        assert all(t.tables == (f"test.{jobs}",) for t in dl.transactions)
        assert all(t.user == "root" and t.thread_id and t.trx_id for t in dl.transactions)
        diag = diagnose(dl)
        patterns.add(diag.pattern)
        assert diag.is_queue_problem, diag
        if diag.pattern == pattern:
            _save(f"mariadb-laravel-{index}-index.txt", text)
            assert rule in diag.rules
    assert pattern in patterns, patterns


# --- the error-log path -----------------------------------------------------------------

def test_error_log_holds_every_deadlock(table: str) -> None:
    with connect(autocommit=True) as c, c.cursor() as cur:
        cur.execute("SELECT @@GLOBAL.innodb_print_all_deadlocks, @@log_error")
        old, log_path = cur.fetchone()
        if not log_path or not os.access(log_path, os.R_OK):
            pytest.skip(f"error log {log_path!r} not readable")
        cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")
        before = int(cur.fetchone()[1])
        offset = os.path.getsize(log_path)
        cur.execute("SET GLOBAL innodb_print_all_deadlocks = ON")
        try:
            jobs = f"{table}_jobs"
            make_jobs(jobs, "legacy", 1500)
            results, _ = run_workers(jobs, workers=16, seconds=6, poll=False,
                                     hint=f" FORCE INDEX (`{jobs}_queue_reserved_at_index`)")
            oo = opposite_order(table)
        finally:
            cur.execute("SET GLOBAL innodb_print_all_deadlocks = %s", (old,))
        cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")
        after = int(cur.fetchone()[1])
    time.sleep(0.2)
    with open(log_path, encoding="utf-8", errors="replace") as fh:
        fh.seek(offset)
        excerpt = fh.read()
    _save("mariadb-error-log-excerpt.log", excerpt[:400_000])
    found = list(iter_deadlocks(excerpt.splitlines()))
    losers = {thread for r in results for _k, thread in r["deadlocks"]}
    losers.add(oo["a_thread"] if oo["a"] == DEADLOCK else oo["b_thread"])
    ours = [d for d in found if any(table in t for x in d.transactions for t in x.tables)]
    assert len(found) == after - before          # every deadlock the server counted
    # each deadlock rolls back exactly one victim, whose client gets error 1213
    assert len(ours) == sum(len(r["deadlocks"]) for r in results) + 1
    assert len(ours) >= 3
    for dl in ours:
        assert dl.at is not None and not dl.truncated and dl.victim is not None
        assert dl.trx(dl.victim).thread_id in losers  # type: ignore[union-attr]
    assert diagnose(ours[-1]).pattern == "opposite-order-rows"
