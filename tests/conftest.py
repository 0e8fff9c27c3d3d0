"""Shared fixtures: URLs of the real local servers and unique names for test objects."""
from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PG_URL = os.environ.get("DBWATCH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
MY_URL = os.environ.get("DBWATCH_TEST_MYSQL", "mysql://root@127.0.0.1:3306/test")
ROOT = Path(__file__).resolve().parent.parent
# The external corpus: $DBWATCH_CORPUS, else shared/corpus beside the checkout. Never a fixed
# path: in a fresh clone with nothing beside it, tests that need it skip (need_corpus).
CORPUS = Path(os.environ.get("DBWATCH_CORPUS") or ROOT.parent / "shared" / "corpus")


def need_corpus(path: Path) -> Path:
    """The corpus file, or skip the test saying why (fixtures the suite needs live in tests/)."""
    if not path.exists():
        pytest.skip(f"{path.name}: external corpus not found ({CORPUS}; set DBWATCH_CORPUS)")
    return path


@pytest.fixture
def pg_url() -> str:
    return PG_URL


@pytest.fixture
def my_url() -> str:
    return MY_URL


@pytest.fixture
def uniq() -> str:
    """A short unique suffix for tables, users and databases made by one test."""
    return uuid.uuid4().hex[:8]


@pytest.fixture
def pg_admin() -> Iterator[object]:
    import psycopg
    conn = psycopg.connect(PG_URL, autocommit=True)
    yield conn
    conn.close()


@pytest.fixture
def my_admin() -> Iterator[object]:
    import pymysql
    conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", password="",
                           database="test", autocommit=True)
    yield conn
    conn.close()


@pytest.fixture
def own_pg_db(uniq: str) -> Iterator[str]:
    """The name of a PostgreSQL database made for this test (dropped after)."""
    import psycopg

    name = f"dbw_own_{uniq}"
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def own_pg_url(own_pg_db: str) -> str:
    """A PostgreSQL database made for this test (dropped after): audit this, not `test`."""
    return f"{PG_URL.rsplit('/', 1)[0]}/{own_pg_db}"


@pytest.fixture
def own_my_url(uniq: str) -> Iterator[str]:
    """A MariaDB schema made for this test (dropped after): audit this, not `test`."""
    import pymysql

    name = f"dbw_own_{uniq}"
    with pymysql.connect(host="127.0.0.1", port=3306, user="root", password="") as conn:
        conn.cursor().execute(f"CREATE DATABASE `{name}`")
    try:
        yield f"{MY_URL.rsplit('/', 1)[0]}/{name}"
    finally:
        with pymysql.connect(host="127.0.0.1", port=3306, user="root", password="") as conn:
            conn.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")


@pytest.fixture(scope="session")
def state_pg_db() -> Iterator[str]:
    """One database on the local PostgreSQL for State tests (each test has its own schema)."""
    import psycopg

    db = f"dbw_state_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{db}"')
    try:
        yield f"{PG_URL.rsplit('/', 1)[0]}/{db}"
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def state_at(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a State lives: a SQLite file, or a fresh schema in a PostgreSQL database.
    DBWATCH_STATE_SCHEMA picks the schema."""
    if request.param == "sqlite":
        return str(tmp_path / "s.db")
    url = request.getfixturevalue("state_pg_db")
    schema = f"s_{uuid.uuid4().hex[:8]}"
    request.getfixturevalue("monkeypatch").setenv("DBWATCH_STATE_SCHEMA", schema)
    return str(url)


# -- deliberately dirty shared servers (issue 24.2) -------------------------------------------
# DBWATCH_DIRTY_SHARED=1 (set by .ci/run) leaves, for the whole session, what other people's
# work leaves on a shared server: a bloated table with autovacuum off in PostgreSQL `test`, a
# Laravel jobs table with a backlog and the legacy index in MariaDB `test`, and a session idle
# in transaction in another database on each. Tests audit databases they create (or scoped
# URLs), so none of this may change their outcome; everything is dropped at the end.
DIRTY = os.environ.get("DBWATCH_DIRTY_SHARED", "") not in ("", "0")


def _dirty_pg(tag: str) -> Iterator[None]:
    import psycopg

    other = f"dbw_dirt_{tag}"
    admin = psycopg.connect(PG_URL, autocommit=True)
    idle = None
    try:
        # its own session: a backend flushes its table statistics when it exits, so the
        # dead tuples are in pg_stat_user_tables at once (not after the 10 s idle flush)
        with psycopg.connect(PG_URL, autocommit=True) as fill:
            fill.execute(f"CREATE TABLE dbw_dirt_bloat_{tag} (id int, pad text) "
                         "WITH (autovacuum_enabled = false)")
            # past PG202's critical 100000 dead tuples: an unscoped audit would exit 2
            fill.execute(f"INSERT INTO dbw_dirt_bloat_{tag} "
                         "SELECT g, 'x' FROM generate_series(1, 150000) g")
            fill.execute(f"DELETE FROM dbw_dirt_bloat_{tag}")
        admin.execute(f'CREATE DATABASE "{other}"')
        idle = psycopg.connect(PG_URL.rsplit("/", 1)[0] + f"/{other}",
                               application_name="dbw-dirt-idle")
        idle.execute("SELECT 1")  # autocommit off: idle in transaction (no xid, no snapshot)
        yield
    finally:
        if idle is not None:
            idle.close()
        admin.execute(f"DROP TABLE IF EXISTS dbw_dirt_bloat_{tag}")
        admin.execute(f'DROP DATABASE IF EXISTS "{other}" WITH (FORCE)')
        admin.close()


def _dirty_my(tag: str) -> Iterator[None]:
    import pymysql

    def connect(db: str | None) -> Any:
        return pymysql.connect(host="127.0.0.1", port=3306, user="root", password="",
                               database=db, autocommit=True)

    other = f"dbw_dirt_{tag}"
    admin = connect("test")
    idle = None
    try:
        with admin.cursor() as cur:
            cur.execute(
                f"CREATE TABLE dbw_dirt_jobs_{tag} (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY "
                "KEY, queue VARCHAR(191) NOT NULL, payload LONGTEXT NOT NULL, attempts TINYINT "
                "UNSIGNED NOT NULL, reserved_at INT UNSIGNED NULL, available_at INT UNSIGNED NOT "
                "NULL, created_at INT UNSIGNED NOT NULL, INDEX (queue, reserved_at)) "
                "ENGINE=InnoDB")
            cur.execute(f"INSERT INTO dbw_dirt_jobs_{tag} (queue, payload, attempts, available_at,"
                        " created_at) SELECT 'default', '{}', 0, UNIX_TIMESTAMP() - 7200, "
                        "UNIX_TIMESTAMP() - 7200 FROM seq_1_to_2000")
            cur.execute(f"CREATE DATABASE `{other}`")
            cur.execute(f"CREATE TABLE `{other}`.t (id INT PRIMARY KEY) ENGINE=InnoDB")
        idle = connect(other)
        idle.autocommit(False)
        with idle.cursor() as cur:
            cur.execute("INSERT INTO t VALUES (1)")  # an open InnoDB transaction, then idle
        yield
    finally:
        if idle is not None:
            idle.close()
        with admin.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS dbw_dirt_jobs_{tag}")
            cur.execute(f"DROP DATABASE IF EXISTS `{other}`")
        admin.close()


@pytest.fixture(scope="session", autouse=True)
def dirty_shared_servers() -> Iterator[None]:
    if not DIRTY:
        yield
        return
    tag = uuid.uuid4().hex[:8]
    with contextlib.ExitStack() as stack:
        for dirt in (_dirty_pg, _dirty_my):
            stack.enter_context(contextlib.contextmanager(dirt)(tag))
        yield


# -- running in parallel (pytest-xdist: `-n 2 --dist loadgroup`, .ci/run) ------------------------
# Each file runs whole on one worker (its module fixtures set up once), as with --dist loadfile;
# the files below, which change or count what is global to the shared MariaDB, run one after
# the other on a single worker: a deadlock made by one would break another's count of the
# server's Innodb_deadlocks delta or error log, and two would fight over general_log_file.
SERIAL_GROUPS: dict[str, frozenset[str]] = {
    "shared-mariadb-globals": frozenset({
        "test_deadlock_not_shown_live.py",   # counts Innodb_deadlocks deltas (storms)
        "test_laravel_scenario.py",          # server deadlock counter == its error log
        "test_mariadb_deadlocks.py",         # SET GLOBAL innodb_print_all_deadlocks; counter
        "test_scope_live.py",                # real deadlocks on the shared server
        "test_deadlock_live_checks.py",      # a real deadlock, read as the server's latest
        "test_innodb_audit_live.py",         # a real deadlock, MY102 on the server's latest
        "test_logs_live.py",                 # SET GLOBAL general_log / slow_query_log files
        "test_real_laravel.py",              # SET GLOBAL general_log_file
    }),
}


def xdist_group_of(path: Path) -> str:
    """The group a test file runs in: its serial group, else the file itself."""
    for group, files in SERIAL_GROUPS.items():
        if path.name in files:
            return group
    return f"file:{path.relative_to(ROOT / 'tests')}".replace("@", "_")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(xdist_group_of(Path(item.path))))


@pytest.fixture(autouse=True)
def _forget_test_passwords() -> Iterator[None]:
    """scrub() masks, in every later message of the process, each password registered so far
    (dbwatch.targets.secrets, process-wide by design): what one test registered (web_fixtures'
    `hunter2`) masked `inter…` in another's text when a worker ran the files in another order.
    Each test's registrations are forgotten after it (module fixtures' stay: made before)."""
    from dbwatch.targets import secrets

    with secrets._lock:
        saved = dict(secrets._patterns), dict(secrets._public)
    yield
    with secrets._lock:
        secrets._patterns.clear()
        secrets._patterns.update(saved[0])
        secrets._public.clear()
        secrets._public.update(saved[1])
        secrets._generation[0] += 1  # what scrub() masks changed back


@pytest.fixture(autouse=True)
def _restore_root_log_handlers() -> Iterator[None]:
    """An in-process `watch` or `main()` installs a root StreamHandler on the sys.stderr of
    that moment — pytest's capture file for the test, closed after it: a daemon thread still
    ending, or a later test's log line, then hit it ("--- Logging error ---" in CI's output).
    The root logger's handlers and level are put back after each test."""
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for h in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(h)
    for h in handlers:
        if h not in root.handlers:
            root.addHandler(h)
    root.setLevel(level)
