"""Real framework code names the culprit (issue 23): Django with Google's sqlcommenter
middleware, Flask + SQLAlchemy with its before_cursor_execute hook, Laravel (Debian's
Illuminate 8.83) running a job with a SQL-commenter hook, and a knex app — each opens a
transaction in a view or job and leaves it idle, on PostgreSQL and on MariaDB (a throwaway
server with performance_schema: the first statement is asserted from its history). The audit
must name the route or job from the tags and the first statement: PostgreSQL through the
daemon's memory (two probe cycles sharing a ProbeCache), MariaDB from performance_schema.

The frameworks come from their registries into tests/.framework-libs (see .ci/run); a missing
one skips its cases, saying why."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import mariadb_instance  # noqa: E402
from culprit_audit import audit, findings_for, origin, txn  # noqa: E402

from dbwatch.probes import ProbeCache  # noqa: E402
from dbwatch.sqlpatterns.tags import without_comments  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APPS = Path(__file__).parent / "framework_apps"
LIBS = ROOT / "tests" / ".framework-libs"
PY_LIBS, NODE_LIBS = LIBS / "python", LIBS / "node" / "node_modules"
IDLE_FOR = 1.3


def _missing(framework: str) -> str | None:
    if framework in ("django", "flask_sqlalchemy"):
        need = {"django": ["django", "google/cloud/sqlcommenter", "pymysql"],
                "flask_sqlalchemy": ["flask", "sqlalchemy", "google/cloud/sqlcommenter"]}
        gone = [n for n in need[framework] if not (PY_LIBS / n).exists()]
        return f"not installed in {PY_LIBS}: {', '.join(gone)} (see .ci/run)" if gone else None
    if framework == "laravel":
        if shutil.which("php") is None:
            return "php not installed (apt-get install php-cli php-mysql php-pgsql)"
        if not Path("/usr/share/php/Illuminate/Database/autoload.php").exists():
            return "php-illuminate-database not installed"
        return None
    if shutil.which("node") is None:
        return "node not installed"
    gone = [n for n in ("knex", "pg", "mysql2") if not (NODE_LIBS / n).exists()]
    return f"not installed in {NODE_LIBS}: {', '.join(gone)} (see .ci/run)" if gone else None


def _command(framework: str, engine: str, host: str, port: int, db: str, table: str) -> list[str]:
    args = [host, str(port), db, table]
    if framework == "django":
        return [sys.executable, str(APPS / "django_app.py"), engine, *args]
    if framework == "flask_sqlalchemy":
        return [sys.executable, str(APPS / "flask_sqlalchemy_app.py"), engine, *args]
    if framework == "laravel":  # with emulated prepares: see the last tests for PDO's default
        return ["php", str(APPS / "laravel_job.php"), "pgsql" if engine == "postgresql" else "mysql",
                *args, "emulate"]
    return ["node", str(APPS / "knex_app.js"), "pg" if engine == "postgresql" else "mysql2", *args]


class App:
    """One framework process speaking the apps' line protocol (ID, STEP1, READY, DONE)."""

    def __init__(self, argv: list[str]) -> None:
        env = dict(os.environ, PYTHONPATH=str(PY_LIBS), NODE_PATH=str(NODE_LIBS))
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env, cwd=APPS)

    def expect(self, word: str) -> str:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                err = self.proc.stderr.read() if self.proc.stderr else ""
                raise AssertionError(f"app ended before {word}: {err[-3000:]}")
            if line.startswith(word):
                return line[len(word):].strip()

    def go_on(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                for _ in range(2):
                    self.go_on()
                self.proc.wait(15)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(5)


# what each framework's tags must say (phrase) and what of the first statement must show
EXPECT = {
    "django": {"phrase": "shop shop:lock-order orders/<int:pk>/lock", "controller": "shop:lock-order",
               "framework": "django:"},
    "flask_sqlalchemy": {"phrase": "shop-api lock_order /orders/<int:pk>/lock",
                         "controller": "lock_order", "framework": "flask:"},
    "laravel": {"phrase": "Shop, job ReindexCatalog", "job": "ReindexCatalog",
                "framework": "laravel:8.83"},
    "knex": {"phrase": "Shop orders#create", "controller": "orders", "action": "create",
             "framework": "knex:"},
}
FRAMEWORKS = list(EXPECT)


@pytest.fixture(scope="module")
def pfs() -> Iterator[mariadb_instance.MariaDbInstance]:
    if not mariadb_instance.available():
        pytest.skip("no mariadbd here for a performance_schema instance")
    with mariadb_instance.MariaDbInstance.create(mariadb_instance.PFS_OPTIONS) as db:
        yield db


@pytest.fixture
def pg_orders(pg_admin: Any, uniq: str) -> Iterator[str]:
    table = f"orders_{uniq}"
    pg_admin.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, s text)")
    pg_admin.execute(f"INSERT INTO {table} VALUES (1, 'new'), (2, 'new')")
    yield table
    pg_admin.execute(f"DROP TABLE IF EXISTS {table}")


def _idle(query: Any, sql: str, ident: int) -> None:
    deadline = time.monotonic() + 20
    while not query(sql, ident):
        assert time.monotonic() < deadline, "the app's session never went idle"
        time.sleep(0.1)


def _plain(sql: str) -> str:
    """The statement without its tag comments, lower case, single-spaced."""
    return " ".join(without_comments(sql).split()).lower()


def _check(f: Any, framework: str) -> None:
    want, o = EXPECT[framework], origin(f)
    assert o["phrase"] == want["phrase"], o
    assert o["framework"].startswith(want["framework"]), o
    for key in ("controller", "action", "job"):
        if key in want:
            assert o[key] == want[key], o
    assert want["phrase"] in f.summary


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_postgresql(framework: str, pg_admin: Any, pg_orders: str) -> None:
    if why := _missing(framework):
        pytest.skip(why)

    def idle(sql: str, pid: int) -> bool:
        row = pg_admin.execute(sql, (pid,)).fetchone()
        return bool(row and row[0])

    sql = ("SELECT state = 'idle in transaction' AND now() - state_change > "
           f"interval '{IDLE_FOR} s' FROM pg_stat_activity WHERE pid = %s")
    app = App(_command(framework, "postgresql", "127.0.0.1", 5432, "test", pg_orders))
    try:
        pid = int(app.expect("ID"))
        app.expect("STEP1")
        _idle(idle, sql, pid)
        cache = ProbeCache()
        from conftest import PG_URL
        audit(PG_URL, ("PG002",), cache)  # cycle 1: the daemon sees the locking read
        app.go_on()
        app.expect("READY")
        _idle(idle, sql, pid)
        res = audit(PG_URL, ("PG001", "PG002"), cache)
        found = findings_for(res, "pid", pid)
        assert sorted(g.rule for g in found) == ["PG001", "PG002"]
        for g in found:  # the long transaction and the idle one: both named
            _check(g, framework)
        (f,) = [g for g in found if g.rule == "PG002"]
        t = txn(f)
        first = t["first_statement"].lower()
        assert "for update" in first and f"{pg_orders}" in first, t
        assert _plain(t["statements"][-1]["query"]).startswith("update"), t
        assert t["wrote"] is True
        held = {(lk["relation"], lk["mode"]) for lk in t["locks"]}
        assert (f"public.{pg_orders}", "RowExclusiveLock") in held, held
    finally:
        app.close()


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_mariadb(framework: str, pfs: mariadb_instance.MariaDbInstance, uniq: str) -> None:
    if why := _missing(framework):
        pytest.skip(why)
    table = f"orders_{uniq}"
    pfs.query(f"CREATE TABLE {table} (id int PRIMARY KEY, s text) ENGINE=InnoDB")
    pfs.query(f"INSERT INTO {table} VALUES (1, 'new'), (2, 'new')")

    def sleeping(sql: str, thread: int) -> bool:
        rows = pfs.query(sql, (thread,))
        return bool(rows and rows[0][0])

    sql = (f"SELECT t.trx_started <= NOW() - INTERVAL {IDLE_FOR + 0.7} SECOND AND "
           "p.COMMAND = 'Sleep' AND p.TIME >= 1 FROM information_schema.INNODB_TRX t JOIN "
           "information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id WHERE p.ID = %s")
    app = App(_command(framework, "mysql", "127.0.0.1", pfs.port, "test", table))
    try:
        thread = int(app.expect("ID"))
        app.expect("STEP1")
        app.go_on()
        app.expect("READY")
        _idle(sleeping, sql, thread)
        res = audit(pfs.url(), ("MY001", "MY002"))
        found = findings_for(res, "thread_id", thread)
        assert sorted(g.rule for g in found) == ["MY001", "MY002"]
        for g in found:  # the long transaction and the idle one: both named
            _check(g, framework)
        (f,) = [g for g in found if g.rule == "MY002"]
        t = txn(f)
        first = (t["first_statement"] or "").lower()
        assert _plain(first).startswith("select"), t
        assert "for update" in first and table in first, t
        assert _plain(t["statements"][-1]["sql_text"]).startswith("update"), t
        assert f.evidence["application"] == origin(f)["application"]
    finally:
        app.close()
        pfs.query(f"DROP TABLE IF EXISTS {table}")


def test_laravel_postgresql_server_side_prepares_say_why(pg_admin: Any, pg_orders: str) -> None:
    """PDO's default on PostgreSQL: each statement is prepared and DEALLOCATEd, so
    pg_stat_activity never shows the statement or its comment. Nothing is invented; the
    reason and the PDO option that fixes it are said."""
    if why := _missing("laravel"):
        pytest.skip(why)

    def idle(sql: str, pid: int) -> bool:
        row = pg_admin.execute(sql, (pid,)).fetchone()
        return bool(row and row[0])

    sql = ("SELECT state = 'idle in transaction' AND now() - state_change > "
           f"interval '{IDLE_FOR} s' FROM pg_stat_activity WHERE pid = %s")
    app = App(["php", str(APPS / "laravel_job.php"), "pgsql", "127.0.0.1", "5432", "test",
               pg_orders])
    try:
        pid = int(app.expect("ID"))
        app.expect("STEP1")
        app.go_on()
        app.expect("READY")
        _idle(idle, sql, pid)
        from conftest import PG_URL
        res = audit(PG_URL, ("PG002",), ProbeCache())
        (f,) = findings_for(res, "pid", pid)
        o = origin(f)
        assert "phrase" not in o and "job" not in o and "application" not in o
        assert any("PDO::ATTR_EMULATE_PREPARES" in u for u in o["unknown"]), o
        assert txn(f)["statements"] == []  # DEALLOCATE is not remembered as a statement
        held = {(lk["relation"], lk["mode"]) for lk in txn(f)["locks"]}
        assert (f"public.{pg_orders}", "RowExclusiveLock") in held  # the locks still tell
    finally:
        app.close()


def test_laravel_mariadb_server_side_prepares_say_why(
        pfs: mariadb_instance.MariaDbInstance, uniq: str) -> None:
    """PDO's default (Laravel's too) on MariaDB: statements run as prepared statements over
    the binary protocol, which performance_schema keeps without text. The transaction's
    statements are listed textless, no first statement is claimed, the reason is said."""
    if why := _missing("laravel"):
        pytest.skip(why)
    table = f"orders_{uniq}"
    pfs.query(f"CREATE TABLE {table} (id int PRIMARY KEY, s text) ENGINE=InnoDB")
    pfs.query(f"INSERT INTO {table} VALUES (1, 'new'), (2, 'new')")

    def sleeping(sql: str, thread: int) -> bool:
        rows = pfs.query(sql, (thread,))
        return bool(rows and rows[0][0])

    sql = (f"SELECT t.trx_started <= NOW() - INTERVAL {IDLE_FOR + 0.7} SECOND AND "
           "p.COMMAND = 'Sleep' AND p.TIME >= 1 FROM information_schema.INNODB_TRX t JOIN "
           "information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id WHERE p.ID = %s")
    app = App(["php", str(APPS / "laravel_job.php"), "mysql", "127.0.0.1", str(pfs.port), "test",
               table])
    try:
        thread = int(app.expect("ID"))
        app.expect("STEP1")
        app.go_on()
        app.expect("READY")
        _idle(sleeping, sql, thread)
        res = audit(pfs.url(), ("MY002",))
        (f,) = findings_for(res, "thread_id", thread)
        o, t = origin(f), txn(f)
        assert "phrase" not in o and "job" not in o and "application" not in o
        assert any("PDO::ATTR_EMULATE_PREPARES" in u for u in o["unknown"]), o
        assert t["first_statement"] is None, t
        assert "PDO::ATTR_EMULATE_PREPARES" in t["statements_unknown"], t
        assert len(t["statements"]) == 2 and all("prepared statement" in s["sql_text"]
                                                 for s in t["statements"]), t
    finally:
        app.close()
        pfs.query(f"DROP TABLE IF EXISTS {table}")
