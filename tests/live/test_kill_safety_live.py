"""Never the wrong kill (issue 18.3) and terminate's scope (issue 12): kill races on both engines
(throwaway servers), a real mysqldump and pg_dump surviving `terminate --execute`, own sessions
recognised by connection id (a session named `dbwatch` is terminable), PostgreSQL scope per
database, and `--holding-xmin` selecting only what PG201 reports."""
from __future__ import annotations

import json
import re
import shutil
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

from dbwatch.actions.guards import Criteria, Policy, plan
from dbwatch.actions.sessions import read_sessions
from dbwatch.actions.terminate import Request, run_target
from dbwatch.targets import open_target, spec_for

sys.path.insert(0, str(Path(__file__).parent))
from killrace import Race, Result
from mariadb_instance import MariaDbInstance
from mariadb_instance import available as mariadb_available
from pgcluster import PgCluster
from pgcluster import available as pg_available
from test_terminate_live import MY, PG, needs_my, needs_pg

RACE_KILLS = 1000        # the target; the time budget below decides on a loaded machine
RACE_BUDGET = 15.0       # seconds of killing per engine


def cli(*args: str) -> tuple[int, Any, str]:
    r = subprocess.run([sys.executable, "-m", "dbwatch", "terminate", *args, "--format", "json"],
                       check=False, capture_output=True, text=True, timeout=90)
    return r.returncode, json.loads(r.stdout) if r.stdout.strip() else None, r.stderr


# --- races -------------------------------------------------------------------------------

def _known_window(res: Result) -> None:
    """The window README names (the victim commits and begins again while the server thread
    between the last check and the kill is descheduled): seen only on loaded machines, 1 in
    235 kills with three test workers and a CPU hog on 2 cores. A change that widened it (a
    client round trip between check and kill) would show here."""
    assert res.in_flight <= max(1, res.kills // 100), res.details


def test_the_race_judges_a_kill_by_when_the_victim_moved_on() -> None:
    """The judge itself, on a made-up log: a younger transaction killed is `wrong` when the
    selected one's COMMIT had returned before the kill began (the re-checks had to see it),
    `in flight` when it returned after (the known window); rolled back is correct, committed
    with nothing younger begun is `late`."""
    from killrace import ConnLog

    class Judged(Race):
        def _committed(self) -> set[tuple[str, int]]:
            return {("1", 1), ("2", 1), ("3", 1)}

    race = Judged("mysql", "mysql://root@127.0.0.1:1/test", "x")
    race.logs = [ConnLog(1, ["a", "b"], 2, [10.0]),   # seq 1 committed at 10.0, seq 2 begun
                 ConnLog(2, ["c", "d"], 2, [20.0]),   # the same at 20.0
                 ConnLog(3, ["e"], 1, [30.0]),        # committed, nothing younger begun
                 ConnLog(4, ["f"], 1, [])]            # never committed
    res = Result(kills=4)
    race._judge([(1, "a", 15.0), (2, "c", 15.0), (3, "e", 25.0), (4, "f", 1.0)], res)
    assert (res.wrong, res.in_flight, res.late) == (1, 1, 1), res.details
    assert res.details[0].startswith("wrong: 1 selected seq 1")
    assert res.details[1].startswith("in flight: 2 selected seq 1, committed 5000.0 ms after")


@pytest.mark.skipif(not pg_available(), reason="no PostgreSQL binaries for initdb")
def test_race_postgresql_no_wrong_kill(uniq: str) -> None:
    with PgCluster.create() as pg:
        race = Race("postgresql", pg.url(), uniq)
        race.setup()
        try:
            res = race.run(RACE_KILLS, RACE_BUDGET)
        finally:
            race.close()
    print(res.line("postgresql"))
    assert res.kills >= 30, res.line("postgresql")
    assert res.wrong == 0, res.details
    _known_window(res)
    assert res.other == 0, res.details


@pytest.mark.skipif(not mariadb_available(), reason="no mariadbd binaries")
def test_race_mariadb_no_wrong_kill(uniq: str) -> None:
    with MariaDbInstance.create() as db:
        race = Race("mysql", db.url(), uniq)
        race.setup()
        try:
            res = race.run(RACE_KILLS, RACE_BUDGET)
        finally:
            race.close()
    print(res.line("mariadb"))
    assert res.kills >= 30, res.line("mariadb")
    assert res.wrong == 0, res.details
    _known_window(res)
    assert all("may be a backup" in d for d in res.details if d.startswith("skipped")), res.details


# --- own sessions by connection id ----------------------------------------------------------

@needs_pg
def test_pg_own_sessions_by_id_and_a_session_named_dbwatch_is_terminable(
        pg_admin: Any, uniq: str) -> None:
    role = f"dbw_own_{uniq}"
    pg_admin.execute(f"CREATE ROLE {role} LOGIN SUPERUSER")
    impostor = psycopg.connect(f"postgresql://{role}@127.0.0.1:5432/test",
                               application_name="dbwatch")
    spec = spec_for(f"postgresql://{role}@127.0.0.1:5432/test")
    own = open_target(spec)          # another dbwatch connection of this process
    conn = open_target(spec)
    try:
        impostor.execute("SELECT txid_current()")
        sessions = read_sessions(conn, spec.name, database="test")
        crit = Criteria(match_user=re.compile(f"^{role}$"))
        got = {d.session.pid: d for d in plan(sessions, crit, Policy(include_superusers=True))[0]}
        assert got[impostor.info.backend_pid].action == "would_terminate"
        for pid in (own.backend_pid, conn.backend_pid):  # type: ignore[attr-defined]
            assert got[pid].action == "skipped_protected"
            assert got[pid].reason == "dbwatch's own connection"
    finally:
        own.close()
        conn.close()
        impostor.close()
        pg_admin.execute(f"DROP ROLE IF EXISTS {role}")


@needs_my
def test_my_own_sessions_by_connection_id(my_admin: Any, uniq: str) -> None:
    user = f"dbw_own_{uniq}"
    with my_admin.cursor() as cur:
        cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'")
        cur.execute(f"GRANT PROCESS, CONNECTION ADMIN ON *.* TO '{user}'@'%'")
    spec = spec_for(f"mysql://{user}:pw@127.0.0.1:3306")
    own, conn = open_target(spec), open_target(spec)
    other = pymysql.connect(host="127.0.0.1", user=user, password="pw", program_name="dbwatch")
    try:
        sessions = read_sessions(conn, spec.name)
        crit = Criteria(match_user=re.compile(f"^{user}$"))
        got = {d.session.thread_id: d for d in
               plan(sessions, crit, Policy(include_backups=True))[0]}
        assert got[other.thread_id()].action == "would_terminate"
        for tid in (own.thread_id, conn.thread_id):  # type: ignore[attr-defined]
            assert got[tid].reason == "dbwatch's own connection"
    finally:
        own.close()
        conn.close()
        other.close()
        with my_admin.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{user}'@'%'")


# --- PostgreSQL scope and --holding-xmin --------------------------------------------------

@pytest.fixture
def two_dbs(pg_admin: Any, uniq: str) -> Iterator[tuple[str, str]]:
    role, other = f"dbw_scope_{uniq}", f"dbw_scope_{uniq}"
    pg_admin.execute(f"CREATE ROLE {role} LOGIN")
    pg_admin.execute(f"CREATE DATABASE {other} OWNER {role}")
    yield role, other
    pg_admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                     (role,))
    pg_admin.execute(f"DROP DATABASE IF EXISTS {other}")
    pg_admin.execute(f"DROP ROLE IF EXISTS {role}")


@needs_pg
def test_pg_terminate_acts_on_the_urls_database_only(two_dbs: tuple[str, str]) -> None:
    role, other = two_dbs
    here = psycopg.connect(f"postgresql://{role}@127.0.0.1:5432/test")
    there = psycopg.connect(f"postgresql://{role}@127.0.0.1:5432/{other}")
    try:
        for c in (here, there):
            c.execute("SELECT txid_current()")
        args = ["--idle-in-transaction", "--match-user", f"^{role}$"]
        rc, rows, err = cli(PG, *args)
        assert rc == 0, err
        assert [(r["pid"], r["database"]) for r in rows] == [(here.info.backend_pid, "test")]
        rc, rows, err = cli(PG, *args, "--all-databases")
        assert rc == 0, err
        assert sorted((r["pid"], r["database"]) for r in rows) == sorted(
            [(here.info.backend_pid, "test"), (there.info.backend_pid, other)])
        table = subprocess.run([sys.executable, "-m", "dbwatch", "terminate", PG, *args],
                               check=False, capture_output=True, text=True, timeout=90).stdout
        assert "DATABASE" in table and " test " in table
        # the database the URL names decides, whatever the connection's own
        rc, rows, err = cli(f"postgresql://postgres@127.0.0.1:5432/{other}", *args, "--execute")
        assert rc == 0, err
        assert [(r["pid"], r["action"]) for r in rows] == [(there.info.backend_pid, "terminated")]
        assert here.execute("SELECT 1").fetchone() == (1,)
    finally:
        here.close()
        there.close()


@needs_pg
def test_pg_holding_xmin_with_only_a_young_session_selects_nothing(
        pg_admin: Any, uniq: str) -> None:
    role = f"dbw_young_{uniq}"
    pg_admin.execute(f"CREATE ROLE {role} LOGIN")
    holder = psycopg.connect(f"postgresql://{role}@127.0.0.1:5432/test")
    try:
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM pg_class")       # a snapshot: backend_xmin
        time.sleep(1.0)
        rc, rows, err = cli(PG, "--holding-xmin", "--match-user", f"^{role}$", "--execute")
        assert rc == 0, err
        assert rows == []                                    # PG201 (10m) reports nothing
        assert holder.execute("SELECT 1").fetchone() == (1,)
    finally:
        holder.close()
        pg_admin.execute(f"DROP ROLE IF EXISTS {role}")


# --- dumps survive ---------------------------------------------------------------------------

def _slow_reader(proc: subprocess.Popen[bytes], out: bytearray) -> None:
    assert proc.stdout is not None
    while chunk := proc.stdout.read(16384):
        out += chunk
        time.sleep(0.01)                   # a slow consumer keeps the dump open for seconds


def _hammer(url: str, user: str, done: threading.Event) -> list[str]:
    """terminate --execute on every session of the dump's user, until the dump ends."""
    seen: list[str] = []
    req = Request(Criteria(match_user=re.compile(f"^{user}$")), Policy(), execute=True)
    while not done.is_set():
        for d in run_target(spec_for(url), req)[0]:
            seen.append(f"{d.action}: {d.reason} [{d.session.command}: {d.session.query}]")
        time.sleep(0.05)
    return seen


@needs_my
@pytest.mark.skipif(shutil.which("mysqldump") is None, reason="no mysqldump")
def test_mysqldump_single_transaction_by_a_normal_user_survives(
        my_admin: Any, uniq: str) -> None:
    db, user = f"dbw_dump_{uniq}", f"dbw_dump_{uniq}"
    with my_admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'")
        cur.execute(f"GRANT SELECT, SHOW VIEW, TRIGGER, LOCK TABLES ON {db}.* TO '{user}'@'%'")
        for n in range(40):
            cur.execute(f"CREATE TABLE {db}.t{n} (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB")
            cur.execute(f"INSERT INTO {db}.t{n} SELECT seq, REPEAT('x', 200) FROM seq_1_to_2000")
    out = bytearray()
    done = threading.Event()
    try:
        proc = subprocess.Popen(["mysqldump", "-h127.0.0.1", f"-u{user}", "-ppw",
                                 "--single-transaction", "--no-tablespaces", db],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        reader = threading.Thread(target=_slow_reader, args=(proc, out))
        reader.start()
        seen: list[str] = []
        hammer = threading.Thread(target=lambda: seen.extend(_hammer(MY, user, done)))
        hammer.start()
        rc = proc.wait(120)
        done.set()
        hammer.join(60)
        reader.join(10)
        err = proc.stderr.read() if proc.stderr else b""
        assert rc == 0, (err, sorted(set(seen))[:10], bytes(out[-300:]))
        assert b"-- Dump completed" in out[-300:]          # "-- Dump completed on <date>"
        # never a kill: protected as a possible backup, or — caught between its connect and its
        # transaction, when nothing marks it yet — re-checked at the moment of the kill and
        # found changed, nothing signalled
        assert seen and any(s.startswith("skipped_protected") for s in seen), set(seen)
        assert all(s.startswith("skipped_protected") or (s.startswith("gone") and "nothing signalled" in s)
                   for s in seen), set(seen)
    finally:
        done.set()
        with my_admin.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {db}")
            cur.execute(f"DROP USER IF EXISTS '{user}'@'%'")


@needs_my
def test_a_dumps_transaction_stays_protected_on_its_unmarked_statements(
        my_admin: Any, uniq: str) -> None:
    """A transaction seen running a dump's marked read (SQL_NO_CACHE) is still protected when
    the listing next finds it running an unmarked, visible statement — as mysqldump's short
    ones between its reads — with program names unreadable; another session of the same
    user running the same unmarked statement is not."""
    user = f"dbw_dtrx_{uniq}"
    with my_admin.cursor() as cur:
        cur.execute("SELECT @@performance_schema")
        if cur.fetchone()[0]:
            pytest.skip("performance_schema is ON here: program names decide, not statements")
        cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'")
    conns = [pymysql.connect(host="127.0.0.1", port=3306, user=user, password="pw",
                             autocommit=True) for _ in range(2)]
    req = Request(Criteria(match_user=re.compile(f"^{user}$")), Policy(), execute=False)

    def decisions_while(sql: str, *who: int) -> dict[int, str]:
        ts = [threading.Thread(target=lambda c=conns[i]: c.cursor().execute(sql)) for i in who]
        for t in ts:
            t.start()
        time.sleep(0.6)
        got = {d.session.thread_id: f"{d.action}: {d.reason}" for d in run_target(spec_for(MY), req)[0]}
        for t in ts:
            t.join(10)
        return got

    try:
        dump, app = conns
        ids = [c.thread_id() for c in conns]
        for c in conns:
            c.cursor().execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        seen = decisions_while("SELECT /*!40001 SQL_NO_CACHE */ SLEEP(1.5)", 0)
        assert seen[ids[0]].startswith("skipped_protected"), seen
        seen = decisions_while("SELECT SLEEP(1.5)", 0, 1)
        assert seen[ids[0]].startswith("skipped_protected") and "backup" in seen[ids[0]], seen
        assert not seen[ids[1]].startswith("skipped_protected"), seen   # never seen as a dump
    finally:
        for c in conns:
            c.close()
        with my_admin.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{user}'@'%'")


@needs_pg
@pytest.mark.skipif(shutil.which("pg_dump") is None, reason="no pg_dump")
def test_pg_dump_survives(two_dbs: tuple[str, str], pg_admin: Any) -> None:
    role, db = two_dbs
    with psycopg.connect(f"postgresql://{role}@127.0.0.1:5432/{db}", autocommit=True) as c:
        for n in range(20):
            c.execute(f"CREATE TABLE t{n} AS SELECT g AS id, repeat('x', 200) AS v "
                      "FROM generate_series(1, 5000) g")
    url = f"postgresql://{role}@127.0.0.1:5432/{db}"
    out = bytearray()
    done = threading.Event()
    proc = subprocess.Popen(["pg_dump", "-h", "127.0.0.1", "-U", role, db],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    reader = threading.Thread(target=_slow_reader, args=(proc, out))
    reader.start()
    seen: list[str] = []
    hammer = threading.Thread(target=lambda: seen.extend(
        _hammer(url.replace(f"{role}@", "postgres@"), role, done)))
    hammer.start()
    try:
        rc = proc.wait(120)
    finally:
        done.set()
        hammer.join(60)
        reader.join(10)
    assert rc == 0, proc.stderr.read() if proc.stderr else ""
    assert b"PostgreSQL database dump complete" in out
    assert seen and all(s.startswith("skipped_protected") for s in seen), set(seen)
