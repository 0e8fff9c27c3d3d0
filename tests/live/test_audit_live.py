"""The foundation's acceptance path: real sessions on both servers, audit --format json."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pymysql
import pytest
from schemas import load_json

CONFIG = """
[[targets]]
name = "pg"
url = "{pg}"
[[targets]]
name = "maria"
url = "{my}"
[rules.PG001]
thresholds = {{ warning = "2s", critical = "1h" }}
[rules.PG002]
thresholds = {{ warning = "2s" }}
[rules.MY001]
thresholds = {{ warning = "2s" }}
[rules.MY002]
thresholds = {{ warning = "2s" }}
"""


@pytest.fixture
def own(pg_url: str, my_url: str, uniq: str) -> Iterator[tuple[str, str]]:
    """A PostgreSQL database and a MariaDB schema made for the test: the audit reads those,
    never the shared `test` databases (whatever others left there)."""
    name = f"dbw_audit_{uniq}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    with pymysql.connect(host="127.0.0.1", user="root", password="") as my:
        my.cursor().execute(f"CREATE DATABASE `{name}`")
    try:
        yield pg_url.rsplit("/", 1)[0] + f"/{name}", my_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with pymysql.connect(host="127.0.0.1", user="root", password="") as my:
            my.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def scene(own: tuple[str, str], uniq: str) -> Iterator[dict[str, object]]:
    """An idle-in-transaction PG session, a long PG query, an open InnoDB trx, legacy indexes,
    in the test's own database and schema."""
    pg_url, my_url = own
    idle = psycopg.connect(pg_url, application_name="billing-app")
    idle.execute("SELECT 1")     # opens the transaction; it stays idle in transaction
    busy = psycopg.connect(pg_url, autocommit=True, application_name="report-job")
    busy_pid = busy.info.backend_pid

    def sleep() -> None:
        try:
            busy.execute("SELECT pg_sleep(60)")  # cancelled at teardown
        except psycopg.Error:
            pass   # cancelled at teardown
    t = threading.Thread(target=sleep, daemon=True)
    t.start()
    pg_admin = psycopg.connect(pg_url, autocommit=True)
    table = f"jobs_{uniq}"
    pg_admin.execute(f"CREATE TABLE {table} (id bigserial primary key, queue varchar(255) not null,"
                     " payload text not null, attempts smallint not null, reserved_at int,"
                     " available_at int not null, created_at int not null)")
    pg_admin.execute(f"CREATE INDEX {table}_queue_reserved_at_index ON {table} (queue, reserved_at)")
    my = pymysql.connect(host="127.0.0.1", user="root", password="",
                         database=my_url.rsplit("/", 1)[1])
    my.cursor().execute(f"CREATE TABLE {table} (id bigint unsigned auto_increment primary key,"
                        " queue varchar(255) not null, payload longtext not null,"
                        " attempts tinyint unsigned not null, reserved_at int unsigned,"
                        " available_at int unsigned not null, created_at int unsigned not null,"
                        " KEY jobs_queue_reserved_at_index (queue, reserved_at))")
    my.cursor().execute(f"INSERT INTO {table} (queue, payload, attempts, available_at, created_at)"
                        " VALUES ('default', '{}', 0, 0, 0)")
    my.begin()
    my.cursor().execute(f"UPDATE {table} SET attempts = 1")   # an open write transaction
    my_thread = my.thread_id()
    time.sleep(3)
    yield {"idle_pid": idle.info.backend_pid, "busy_pid": busy_pid, "my_thread": my_thread,
           "table": table}
    my.rollback()
    my.cursor().execute(f"DROP TABLE {table}")
    my.close()
    idle.close()
    pg_admin.execute(f"SELECT pg_cancel_backend({busy_pid})")
    t.join(5)
    busy.close()
    pg_admin.execute(f"DROP TABLE {table}")
    pg_admin.close()


def test_audit_names_the_offenders(scene: dict[str, object], own: tuple[str, str],
                                   tmp_path: Path) -> None:
    pg_url, my_url = own
    cfg = tmp_path / "dbwatch.toml"
    cfg.write_text(CONFIG.format(pg=pg_url, my=my_url))
    proc = subprocess.run([sys.executable, "-m", "dbwatch", "audit", "--config", str(cfg),
                           "--format", "json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode in (1, 2), proc.stderr
    doc = load_json(proc.stdout, "audit")
    assert {t["name"]: t["status"] for t in doc["targets"]} == {"pg": "ok", "maria": "ok"}
    assert {t["engine"] for t in doc["targets"]} == {"postgresql", "mariadb"}
    by = {(f["rule"], f["target"], f["subject"]): f for f in doc["findings"]}
    idle = by[("PG002", "pg", f"pid {scene['idle_pid']}")]
    assert idle["evidence"]["application"] == "billing-app"
    assert f"pg_terminate_backend({scene['idle_pid']})" in idle["fix"]
    assert ("PG001", "pg", f"pid {scene['busy_pid']}") in by
    assert ("MY001", "maria", f"thread {scene['my_thread']}") in by
    assert ("MY002", "maria", f"thread {scene['my_thread']}") in by
    qu = [f for f in doc["findings"] if f["rule"] == "QU301" and scene["table"] in f["subject"]]
    assert {f["target"] for f in qu} == {"pg", "maria"}
    for f in doc["findings"]:
        assert f["fix"] and f["summary"] and len(f["fingerprint"]) == 16
    my_fix = [f for f in qu if f["target"] == "maria"][0]["fix"]
    assert "DROP INDEX `jobs_queue_reserved_at_index`" in my_fix and "(`queue`)" in my_fix


def test_fingerprint_is_stable_across_cycles(scene: dict[str, object], own: tuple[str, str],
                                             tmp_path: Path) -> None:
    pg_url, my_url = own
    cfg = tmp_path / "dbwatch.toml"
    cfg.write_text(CONFIG.format(pg=pg_url, my=my_url))
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-m", "dbwatch", "audit", "pg", "--config", str(cfg),
                               "--select", "PG002", "--format", "json"],
                              capture_output=True, text=True, timeout=60)
        runs.append({f["subject"]: f["fingerprint"] for f in load_json(proc.stdout, "audit")["findings"]})
        time.sleep(1.1)
    mine = f"pid {scene['idle_pid']}"     # other sessions on the shared server may come and go
    assert runs[0][mine] == runs[1][mine]


def test_table_output_fits_100_columns(scene: dict[str, object], own: tuple[str, str]) -> None:
    pg_url, my_url = own
    proc = subprocess.run([sys.executable, "-m", "dbwatch", "audit", pg_url, my_url],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode in (1, 2)
    assert "QU301" in proc.stdout and "fix:" in proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines()) <= 100
