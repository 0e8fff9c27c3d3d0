"""Nothing unsaid, live on the local MariaDB: a storm of real deadlocks between daemon cycles of a
target without `log_file`; what the daemon recorded plus what it says it did not show equals the
server's counter delta (Innodb_deadlocks) over the same cycles, in the state, `status`,
`deadlocks --history` and MY102; a one-shot audit's not_shown is the server total minus shown."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

pymysql = pytest.importorskip("pymysql")


def connect(db: str | None = None) -> Any:
    return pymysql.connect(host="127.0.0.1", user="root", password="", database=db,
                           autocommit=False, connect_timeout=3)  # fmt: skip


def _up() -> bool:
    try:
        connect().close()
        return True
    except pymysql.err.MySQLError:
        return False


pytestmark = pytest.mark.skipif(not _up(), reason="no MariaDB at 127.0.0.1:3306")


def counter() -> int:
    c = connect()
    try:
        cur = c.cursor()
        cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")
        return int(cur.fetchone()[1])
    finally:
        c.close()


@pytest.fixture
def database() -> Iterator[str]:
    name = f"dbw_unshown_{uuid.uuid4().hex[:8]}"
    c = connect()
    cur = c.cursor()
    cur.execute(f"CREATE DATABASE {name}")
    cur.execute(f"CREATE TABLE {name}.t (id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB")
    cur.execute(f"INSERT INTO {name}.t VALUES " + ",".join(f"({i}, 0)" for i in range(1, 13)))
    c.commit()
    try:
        yield name
    finally:
        cur.execute(f"DROP DATABASE {name}")
        c.close()


def storm(db: str, rounds: int, pairs: int = 4) -> int:
    """`pairs` pairs of sessions in threads, each round updating two rows in opposite
    orders; returns how many statements were rolled back as deadlock victims (error 1213)."""
    victims = [0]
    lock = threading.Lock()

    def pair(k: int) -> None:
        r1, r2 = 2 * k + 1, 2 * k + 2
        for _ in range(rounds):
            a, b = connect(db), connect(db)
            try:
                a.cursor().execute("UPDATE t SET v = v + 1 WHERE id = %s", (r1,))
                b.cursor().execute("UPDATE t SET v = v + 1 WHERE id = %s", (r2,))
                go = threading.Barrier(2)

                def second(conn: Any, row: int) -> None:
                    go.wait()
                    try:
                        conn.cursor().execute("UPDATE t SET v = v + 1 WHERE id = %s", (row,))
                        conn.commit()
                    except pymysql.err.OperationalError as exc:
                        if exc.args[0] != 1213:
                            raise
                        conn.rollback()
                        with lock:
                            victims[0] += 1

                ts = [threading.Thread(target=second, args=(a, r2)),
                      threading.Thread(target=second, args=(b, r1))]  # fmt: skip
                for t in ts:
                    t.start()
                for t in ts:
                    t.join(30)
            finally:
                a.close()
                b.close()

    threads = [threading.Thread(target=pair, args=(k,)) for k in range(pairs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return victims[0]


def dbwatch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dbwatch", *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, check=False)  # fmt: skip


def test_storm_shown_plus_not_shown_is_the_server_delta(tmp_path: Path, database: str) -> None:
    cfg, state = tmp_path / "dbwatch.toml", tmp_path / "state.db"
    cfg.write_text(f'[[targets]]\nname = "maria"\nurl = "mysql://root@127.0.0.1:3306/{database}"\n'
                   'interval = "10s"\n')  # fmt: skip
    once = ("watch", "--config", str(cfg), "--state", str(state), "--once")
    before = counter()
    r = dbwatch(*once)
    assert r.returncode in (0, 1), r.stderr
    baseline = time.time()  # what the first cycle recorded was before the count started
    made = storm(database, rounds=5)  # 4 pairs x 5 rounds
    r = dbwatch(*once)
    assert r.returncode in (0, 1), r.stderr
    made += storm(database, rounds=4)
    r = dbwatch(*once)
    assert r.returncode in (0, 1), r.stderr
    after = counter()
    assert made >= 30, made  # a storm: most rounds deadlock

    db = sqlite3.connect(state)
    series = db.execute(
        "SELECT key, value FROM series WHERE target = 'maria' AND key LIKE 'deadlocks:%' "
        "ORDER BY ts"
    ).fetchall()
    counts = [int(v) for k, v in series if k == "deadlocks:server"]
    totals = [int(v) for k, v in series if k == "deadlocks:not_shown"]
    assert len(counts) == 3 and len(totals) == 3
    assert before <= counts[0] and counts[-1] <= after  # the daemon's reads are the server's
    delta = counts[-1] - counts[0]
    assert delta >= made  # every rolled-back statement was counted (others may add theirs)
    shown = db.execute(
        "SELECT count(*) FROM deadlocks WHERE target = 'maria' AND seen_at > ?", (baseline,)
    ).fetchone()[0]
    assert 1 <= shown <= 2  # the status text shows the latest only: one per cycle
    assert shown + totals[-1] == delta, (shown, totals, delta)
    # MY102's evidence carries the same running total
    rows = db.execute("SELECT data FROM findings WHERE rule = 'MY102'").fetchall()
    evid = [json.loads(d)["evidence"] for (d,) in rows]
    assert any(e.get("not_shown") == totals[-1] for e in evid), (evid, totals)

    status = dbwatch("status", "--config", str(cfg), "--state", str(state), "--format", "json")
    (line,) = [t for t in json.loads(status.stdout)["targets"] if t["target"] == "maria"]
    assert line["deadlocks_not_shown"] == totals[-1]
    text = dbwatch("status", "--config", str(cfg), "--state", str(state)).stdout
    assert f"maria: {totals[-1]} deadlocks the server counted" in text
    hist = dbwatch("deadlocks", "--history", "--state", str(state), "--format", "json")
    assert json.loads(hist.stdout)["not_shown"] == {"maria": totals[-1]}
    hist_text = dbwatch("deadlocks", "--history", "--state", str(state)).stdout
    assert f"maria: {totals[-1]} more deadlock(s) counted by the server and not shown" in hist_text


def test_one_shot_audit_not_shown_is_the_total_minus_shown(database: str) -> None:
    storm(database, rounds=2, pairs=2)
    r = dbwatch("audit", f"mysql://root@127.0.0.1:3306/{database}", "--format", "json")
    my102 = [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "MY102"]
    assert my102, r.stdout
    ev = my102[0]["evidence"]
    assert ev["deadlocks_total"] >= 1
    assert ev["not_shown"] == ev["deadlocks_total"] - 1 and ev["not_shown_basis"] == "server total"
    assert "more deadlock(s) not shown here" in my102[0]["summary"] or ev["not_shown"] == 0


def test_postgres_pg102_running_count(tmp_path: Path) -> None:
    """PostgreSQL, a target scoped to its own database: pg_stat_database.deadlocks of that
    database is ours alone, so the daemon's running count is exactly the deadlocks made."""
    psycopg = pytest.importorskip("psycopg")
    from conftest import PG_URL

    base = PG_URL.rsplit("/", 1)[0]
    name = f"dbw_unshown_{uuid.uuid4().hex[:8]}"
    admin = psycopg.connect(PG_URL, autocommit=True)
    admin.execute(f"CREATE DATABASE {name}")
    url = f"{base}/{name}"
    try:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("CREATE TABLE t (id int PRIMARY KEY, v int)")
            c.execute("INSERT INTO t VALUES (1, 0), (2, 0)")

        def deadlock() -> None:
            a, b = psycopg.connect(url), psycopg.connect(url)
            try:
                a.execute("SET deadlock_timeout = '50ms'")
                b.execute("SET deadlock_timeout = '50ms'")
                a.execute("UPDATE t SET v = v + 1 WHERE id = 1")
                b.execute("UPDATE t SET v = v + 1 WHERE id = 2")
                errs: list[BaseException] = []

                def second(conn: Any, row: int) -> None:
                    try:
                        conn.execute("UPDATE t SET v = v + 1 WHERE id = %s", (row,))
                    except psycopg.errors.DeadlockDetected as exc:
                        errs.append(exc)
                    conn.rollback()

                ts = [threading.Thread(target=second, args=(a, 2)),
                      threading.Thread(target=second, args=(b, 1))]  # fmt: skip
                for t in ts:
                    t.start()
                for t in ts:
                    t.join(20)
                assert len(errs) == 1
            finally:
                a.close()
                b.close()

        def counted() -> int:
            with psycopg.connect(url, autocommit=True) as c:
                row = c.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = %s",
                                (name,)).fetchone()  # fmt: skip
                return int(row[0]) if row else 0

        def settle(n: int) -> None:  # the victim's backend flushes its stats within ~1 s
            deadline = time.time() + 15
            while counted() < n and time.time() < deadline:
                time.sleep(0.2)
            assert counted() == n

        cfg, state = tmp_path / "dbwatch.toml", tmp_path / "state.db"
        cfg.write_text(f'[[targets]]\nname = "pg"\nurl = "{url}"\ninterval = "10s"\n')
        once = ("watch", "--config", str(cfg), "--state", str(state), "--once")
        assert dbwatch(*once).returncode in (0, 1)  # the baseline
        for _ in range(3):
            deadlock()
        settle(3)
        assert dbwatch(*once).returncode in (0, 1)
        deadlock()
        settle(4)
        assert dbwatch(*once).returncode in (0, 1)
        db = sqlite3.connect(state)
        totals = [int(v) for (v,) in db.execute(
            "SELECT value FROM series WHERE target = 'pg' AND key = 'deadlocks:not_shown' "
            "ORDER BY ts")]  # fmt: skip
        assert totals == [0, 3, 4]
        rows = db.execute("SELECT data FROM findings WHERE rule = 'PG102'").fetchall()
        assert any(json.loads(d)["evidence"]["not_shown"] == 4 for (d,) in rows), rows
        status = dbwatch("status", "--config", str(cfg), "--state", str(state), "--format", "json")
        (line,) = [t for t in json.loads(status.stdout)["targets"] if t["target"] == "pg"]
        assert line["deadlocks_not_shown"] == 4
    finally:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,)
        )
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.close()
