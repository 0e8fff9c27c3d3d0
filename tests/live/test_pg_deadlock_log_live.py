"""Real PostgreSQL deadlocks logged by a throwaway cluster in stderr, csvlog and jsonlog: read
by `dbwatch deadlocks --log`, same shape, diagnosed (a claim against a batch completion)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")
sys.path.insert(0, str(Path(__file__).parent))
import pgcluster  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not pgcluster.available(), reason="no PostgreSQL binaries")


def make_deadlock(url: str) -> None:
    """A claim (`FOR UPDATE` without SKIP LOCKED) against a batch completion, opposite order."""
    a = psycopg.connect(url)
    b = psycopg.connect(url)
    try:
        b.execute("UPDATE jobs SET state = 'done' WHERE id IN (2)")
        a.execute("SELECT * FROM jobs WHERE queue = 'default' AND state = 'ready' "
                  "ORDER BY id LIMIT 1 FOR UPDATE")  # locks row 1
        err: list[BaseException] = []

        def claim_more() -> None:
            try:
                a.execute("SELECT * FROM jobs WHERE queue = 'default' AND state = 'ready' "
                          "ORDER BY id LIMIT 2 FOR UPDATE")  # needs row 2 as well
            except psycopg.errors.DeadlockDetected as exc:
                err.append(exc)

        t = threading.Thread(target=claim_more)
        t.start()
        time.sleep(0.3)
        try:
            b.execute("UPDATE jobs SET state = 'done' WHERE id IN (1)")
        except psycopg.errors.DeadlockDetected as exc:
            err.append(exc)
        t.join(10)
        assert err, "no deadlock happened"
    finally:
        a.rollback()
        b.rollback()
        a.close()
        b.close()


def test_stderr_csvlog_jsonlog(tmp_path: Path) -> None:
    settings = {"logging_collector": "on", "log_destination": "'stderr,csvlog,jsonlog'",
                "log_directory": "'pglog'", "log_filename": "'pg'",
                "log_line_prefix": "'%m [%p] %q%u@%d '", "deadlock_timeout": "'100ms'"}
    with pgcluster.PgCluster.create(settings) as pg:
        pg.psql("CREATE TABLE jobs (id int PRIMARY KEY, queue text, state text)")
        pg.psql("INSERT INTO jobs VALUES (1, 'default', 'ready'), (2, 'default', 'ready')")
        for _ in range(2):
            make_deadlock(pg.url())
        time.sleep(1.0)
        logdir = pg.data / "pglog"
        files = {"stderr": logdir / "pg", "csvlog": logdir / "pg.csv", "jsonlog": logdir / "pg.json"}
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        seen = {}
        for kind, path in files.items():
            r = subprocess.run([sys.executable, "-m", "dbwatch", "deadlocks", "--log", str(path),
                                "--format", "json"], capture_output=True, text=True, env=env,
                               timeout=60)
            assert r.returncode == 0, (kind, r.stderr)
            dls = json.loads(r.stdout)["deadlocks"]
            assert len(dls) == 2, (kind, dls)
            for dl in dls:
                assert len(dl["transactions"]) == 2
                assert sum(t["victim"] for t in dl["transactions"]) == 1
                assert all(t["query"] for t in dl["transactions"])
                assert all(lk["waiting"] and lk["mode"] for lk in dl["locks"])
                assert dl["diagnosis"]["pattern"] == "queue-claim-vs-delete", dl["diagnosis"]
            seen[kind] = [[t["thread_id"] for t in d["transactions"]] for d in dls]
        assert seen["stderr"] == seen["csvlog"] == seen["jsonlog"]
        r = subprocess.run([sys.executable, "-m", "dbwatch", "deadlocks", "--log",
                            str(files["csvlog"]), "--summary", "--format", "json"],
                           capture_output=True, text=True, env=env, timeout=60)
        s = json.loads(r.stdout)["summary"]
        assert s["deadlocks"] == 2 and s["by_pattern"] == {"queue-claim-vs-delete": 2}


# --- every log_line_prefix, verbosity, a three-process cycle, a German server ----------------

from dbwatch.parsers.pg_deadlock import iter_pg_deadlocks  # noqa: E402


def cycle(url: str, n: int) -> list[int]:
    """n sessions each hold row i and want row i+1 (the last wants row 1); the last one to wait
    detects the cycle. Returns the pids in the order PostgreSQL prints them: the victim first,
    then whom it waits for, and so on around the cycle."""
    conns = [psycopg.connect(url) for _ in range(n)]
    pids = [c.info.backend_pid for c in conns]
    victim: list[int] = []
    try:
        for i, c in enumerate(conns):
            c.execute("UPDATE jobs SET state = 'held' WHERE id = %s", (i + 1,))

        def want(i: int) -> None:
            try:
                conns[i].execute("UPDATE jobs SET state = 'want' WHERE id = %s", ((i + 1) % n + 1,))
            except psycopg.errors.DeadlockDetected:
                victim.append(i)

        threads = [threading.Thread(target=want, args=(i,)) for i in range(n - 1)]
        for t in threads:
            t.start()
        time.sleep(0.3)  # the others wait longer than deadlock_timeout: the last one detects
        want(n - 1)
        for i in reversed(range(n - 1)):  # the victim's locks are gone: i gets its row,
            threads[i].join(10)  # then its rollback lets i - 1 go on
            conns[i].rollback()
    finally:
        for c in conns:
            c.close()
    assert victim == [n - 1], victim
    return [pids[n - 1], *pids[: n - 1]]


PREFIXES = ["", "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ", "%m %e [%p] %q%u@%d ",
            "< %m >", "%n %p ", "%t:%r:%u@%d:[%p]:", "%m [%p] "]  # fmt: skip


def test_prefixes_verbosity_and_a_three_way_cycle() -> None:
    settings = {"logging_collector": "on", "log_destination": "'stderr'",
                "log_directory": "'pglog'", "log_filename": "'pg'", "deadlock_timeout": "'100ms'"}
    with pgcluster.PgCluster.create(settings) as pg:
        pg.psql("CREATE TABLE jobs (id int PRIMARY KEY, queue text, state text)")
        pg.psql("INSERT INTO jobs SELECT g, 'default', 'ready' FROM generate_series(1, 3) g")
        expected: list[tuple[list[int], str]] = []
        for i, prefix in enumerate(PREFIXES):
            verbosity = ("verbose", "default", "terse")[i % 3]
            pg.psql(f"ALTER SYSTEM SET log_line_prefix = '{prefix}'")
            pg.psql(f"ALTER SYSTEM SET log_error_verbosity = '{verbosity}'")
            pg.psql("SELECT pg_reload_conf()")
            time.sleep(0.2)
            expected.append((cycle(pg.url(), 3 if i % 2 else 2), verbosity))
        time.sleep(0.5)
        text = (pg.data / "pglog" / "pg").read_text(errors="replace")
    got = list(iter_pg_deadlocks(text.splitlines()))
    assert len(got) == len(expected), text
    for dl, (pids, verbosity) in zip(got, expected, strict=True):
        if verbosity == "terse":  # no DETAIL: the victim and its statement, flagged as cut
            assert dl.truncated and len(dl.transactions) == 1
            assert "UPDATE jobs" in (dl.transactions[0].query or "")
            continue
        n = len(pids)
        assert [t.thread_id for t in dl.transactions] == pids, (pids, dl)
        assert [t.blocked_by for t in dl.transactions] == [(i + 1) % n + 1 for i in range(n)]
        assert dl.victim == 1 and not dl.truncated and not dl.unparsed, dl.unparsed
        assert all(lk.mode == "ShareLock" and lk.lock_type == "TRANSACTION" for lk in dl.locks)
        assert all("UPDATE jobs SET state = 'want'" in (t.query or "") for t in dl.transactions)
        assert all(t.trx_id for t in dl.transactions)  # each one's xid, named by its waiter


def test_german_server_by_sqlstate(tmp_path: Path) -> None:
    """lc_messages = de_DE: FEHLER / Verklemmung (Deadlock) entdeckt / Prozess N wartet auf …;
    recognised by 40P01 (%e, csvlog, jsonlog). The locale is compiled into the cluster's dir."""
    if not (Path("/usr/share/locale/de/LC_MESSAGES") / "postgres-15.mo").exists():
        pytest.skip("PostgreSQL's German messages are not installed")
    with pgcluster.PgCluster.create() as pg:
        loc = pg.base / "locale"
        loc.mkdir()
        r = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", str(loc / "de_DE.UTF-8")],
                           capture_output=True, text=True, check=False)  # fmt: skip
        if r.returncode not in (0, 1) or not (loc / "de_DE.UTF-8").exists():
            pytest.skip(f"cannot compile the de_DE locale: {r.stderr.strip()[:200]}")
        pg.stop()
        pg.configure({"logging_collector": "on", "log_destination": "'stderr,csvlog,jsonlog'",
                      "log_directory": "'pglog'", "log_filename": "'pg'",
                      "deadlock_timeout": "'100ms'", "lc_messages": "'de_DE.UTF-8'",
                      "log_line_prefix": "'%m [%p] %e '"})  # fmt: skip
        subprocess.run(["runuser", "-u", pgcluster.OS_USER, "--", "env", f"LOCPATH={loc}",
                        str(pgcluster.BIN / "pg_ctl"), "-D", str(pg.data), "-l",
                        str(pg.base / "log"), "-w", "-t", "60", "start"],
                       check=True, capture_output=True, timeout=120)  # fmt: skip
        pg.running = True
        pg.psql("CREATE TABLE jobs (id int PRIMARY KEY, queue text, state text)")
        pg.psql("INSERT INTO jobs SELECT g, 'default', 'ready' FROM generate_series(1, 3) g")
        pids = cycle(pg.url(), 2)
        time.sleep(0.5)
        logs = {k: (pg.data / "pglog" / f"pg{k}").read_text(errors="replace") for k in ("", ".csv", ".json")}
    assert "FEHLER" in logs[""] and "40P01" in logs[""], logs[""][-2000:]
    for kind, text in logs.items():
        (dl,) = list(iter_pg_deadlocks(text.splitlines(keepends=True)))
        assert [t.thread_id for t in dl.transactions] == pids, (kind, dl)
        assert [t.blocked_by for t in dl.transactions] == [2, 1]
        assert dl.victim == 1 and [lk.mode for lk in dl.locks] == ["ShareLock", "ShareLock"]
        assert all("UPDATE jobs SET state = 'want'" in (t.query or "") for t in dl.transactions)
