"""PG501 and MY501 read what the server gives other sessions, never dbwatch's own session
values (issue 24.1): throwaway servers with the timeouts off fire them even though dbwatch
sets short timeouts on its own probe session; server-wide values and role/database
overrides keep them quiet."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import mariadb_instance  # noqa: E402
import pgcluster  # noqa: E402

from dbwatch.targets import TargetSpec, open_target  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def findings(url: str, rule: str) -> dict[str, dict[str, Any]]:
    """rule's findings of one audit, by subject."""
    proc = subprocess.run([sys.executable, "-m", "dbwatch", "audit", url, "--select", rule,
                           "--format", "json"], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)
    doc = json.loads(proc.stdout)
    assert doc["targets"][0]["status"] == "ok", proc.stdout + proc.stderr
    return {f["subject"]: f for f in doc["findings"] if f["rule"] == rule}


@pytest.fixture(scope="module")
def cluster() -> Iterator[pgcluster.PgCluster]:
    if not pgcluster.available():
        pytest.skip("no PostgreSQL binaries for a throwaway cluster")
    with pgcluster.PgCluster.create() as pg:
        pg.psql("CREATE DATABASE nc_app")
        yield pg


def test_pg501_fires_on_a_server_without_timeouts_despite_dbwatchs_own(
        cluster: pgcluster.PgCluster) -> None:
    url = cluster.url("nc_app")
    # dbwatch's own probe session does run with short timeouts ...
    conn = open_target(TargetSpec(name="pg", url=url, engine="postgresql"))
    try:
        own = {r["name"]: r["setting"] for r in conn.rows(
            "SELECT name, setting FROM pg_settings WHERE name IN "
            "('statement_timeout', 'idle_in_transaction_session_timeout')")}
    finally:
        conn.close()
    assert own == {"statement_timeout": "5000", "idle_in_transaction_session_timeout": "10000"}
    # ... and the server gives every other session none: both are reported.
    got = findings(url, "PG501")
    assert set(got) == {"setting statement_timeout",
                        "setting idle_in_transaction_session_timeout"}
    assert got["setting statement_timeout"]["evidence"]["value"] == "0"


def test_pg501_quiet_for_database_role_and_server_wide_values(
        cluster: pgcluster.PgCluster) -> None:
    url = cluster.url("nc_app")
    cluster.psql("CREATE ROLE nc_worker LOGIN")
    try:
        cluster.psql("ALTER DATABASE nc_app SET statement_timeout = '30s'")
        cluster.psql("ALTER ROLE nc_worker SET idle_in_transaction_session_timeout = '5min'")
        assert findings(url, "PG501") == {}
        # an override of 0 is no override
        cluster.psql("ALTER ROLE nc_worker SET idle_in_transaction_session_timeout = 0")
        assert set(findings(url, "PG501")) == {"setting idle_in_transaction_session_timeout"}
        # server-wide (ALTER SYSTEM + reload): new sessions get it, dbwatch's reset value too
        cluster.psql("ALTER DATABASE nc_app RESET statement_timeout")
        cluster.psql("ALTER SYSTEM SET statement_timeout = '1min'")
        cluster.psql("ALTER SYSTEM SET idle_in_transaction_session_timeout = '10min'")
        cluster.psql("SELECT pg_reload_conf()")
        cluster.wait_for("SELECT current_setting('statement_timeout') = '1min'")
        assert findings(url, "PG501") == {}
    finally:
        cluster.psql("ALTER SYSTEM RESET ALL")
        cluster.psql("SELECT pg_reload_conf()")
        cluster.psql("ALTER DATABASE nc_app RESET ALL")
        cluster.psql("DROP ROLE nc_worker")


@pytest.fixture(scope="module")
def maria() -> Iterator[mariadb_instance.MariaDbInstance]:
    if not mariadb_instance.available():
        pytest.skip("no mariadbd here")
    pytest.importorskip("pymysql")
    with mariadb_instance.MariaDbInstance.create(["--innodb-lock-wait-timeout=600"]) as db:
        yield db


def test_my501_reads_global_variables_not_dbwatchs_session(
        maria: mariadb_instance.MariaDbInstance) -> None:
    """dbwatch SETs SESSION innodb_lock_wait_timeout = 2 on its own session: the global 600
    must still be reported, and innodb_print_all_deadlocks OFF too."""
    got = findings(maria.url(), "MY501")
    assert set(got) == {"setting innodb_lock_wait_timeout",
                        "setting innodb_print_all_deadlocks"}
    assert got["setting innodb_lock_wait_timeout"]["evidence"]["value"] == 600


def test_my501_quiet_when_the_global_values_are_safe(
        maria: mariadb_instance.MariaDbInstance) -> None:
    maria.query("SET GLOBAL innodb_lock_wait_timeout = 20")
    maria.query("SET GLOBAL innodb_print_all_deadlocks = ON")
    try:
        # a session of another client keeping a risky session value changes nothing
        with maria.connect() as conn, conn.cursor() as cur:
            cur.execute("SET SESSION innodb_lock_wait_timeout = 900")
            assert findings(maria.url(), "MY501") == {}
    finally:
        maria.query("SET GLOBAL innodb_lock_wait_timeout = 600")
        maria.query("SET GLOBAL innodb_print_all_deadlocks = OFF")
