"""Symfony Messenger 5.4 (Debian) Doctrine transport driven by its own Worker, retry strategy
and failure transport, on both engines: healthy, backlog, exhausted retries (messages in the
failure transport), a consumer SIGKILLed mid-message (redelivered after redeliver_timeout)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pymysql
import pytest
from queue_libs import audit, by_rule, pg_database, queue_findings

APPS = Path(__file__).with_name("queue_apps")
NEEDS = ("/usr/share/php/Symfony/Component/Messenger/Bridge/Doctrine/autoload.php",
         "/usr/share/php/Doctrine/DBAL/autoload.php",
         "/usr/share/php/Symfony/Component/EventDispatcher/autoload.php")


@contextmanager
def my_database(name: str) -> Iterator[Any]:
    conn = pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)
    conn.cursor().execute(f"CREATE DATABASE {name}")
    conn.select_db(name)
    try:
        yield conn
    finally:
        conn.cursor().execute(f"DROP DATABASE {name}")
        conn.close()


def _php(params: dict[str, str], *args: str) -> None:
    subprocess.run(["php", "messenger.php", json.dumps(params), *args], cwd=APPS, check=True,
                   timeout=120, capture_output=True)


@pytest.mark.parametrize("engine", ["postgresql", "mariadb"])
def test_symfony_messenger_every_failure_mode(uniq: str, engine: str) -> None:
    if shutil.which("php") is None or not all(Path(p).is_file() for p in NEEDS):
        pytest.skip("php with php-symfony-doctrine-messenger, php-doctrine-dbal and "
                    "php-symfony-event-dispatcher is needed (.ci/run installs them)")
    db = f"dbw_sym_{uniq}"
    if engine == "postgresql":
        ctx: Any = pg_database(db)
        params = {"driver": "pdo_pgsql", "host": "127.0.0.1", "user": "postgres", "dbname": db}
        url = f"postgresql://postgres@127.0.0.1:5432/{db}"
    else:
        ctx = my_database(db)
        params = {"driver": "pdo_mysql", "host": "127.0.0.1", "user": "root", "dbname": db}
        url = f"mysql://root@127.0.0.1:3306/{db}"
    with ctx as handle:
        def sql(stmt: str) -> None:
            if engine == "postgresql":
                import psycopg
                with psycopg.connect(handle, autocommit=True) as c:
                    c.execute(stmt)
            else:
                handle.cursor().execute(stmt)

        _php(params, "send", "Hello", "5")
        _php(params, "consume", "5")
        assert queue_findings(audit(url, "--select", "QU,DW")) == []
        _php(params, "send", "Boom", "4")
        _php(params, "consume", "8")  # each tried twice, then sent to the failure transport
        _php(params, "send", "Slow", "3")
        worker = subprocess.Popen(["php", "messenger.php", json.dumps(params), "hang"],
                                  cwd=APPS, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert worker.stdout is not None and worker.stdout.readline().strip() == b"working"
        time.sleep(2)  # it takes one message (delivered_at set) and sleeps in the handler
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        _php(params, "send", "Hello", "500")
        iv = "interval '2 hours'" if engine == "postgresql" else "INTERVAL 2 HOUR"
        sql(f"UPDATE messenger_messages SET available_at = available_at - {iv}, "
            f"created_at = created_at - {iv} WHERE queue_name = 'default'")
        sql(f"UPDATE messenger_messages SET delivered_at = delivered_at - {iv} "
            "WHERE delivered_at IS NOT NULL")  # what two hours after the kill look like
        data = audit(url, "--select", "QU,DW")
    table = ("public" if engine == "postgresql" else db) + ".messenger_messages"
    qu = queue_findings(data, table)
    assert qu and all(f["evidence"]["library"] == "symfony-messenger" for f in qu)
    (backlog,) = by_rule(data, "QU001")
    assert backlog["evidence"]["queue"] == "default" and backlog["evidence"]["depth"] == 502
    (stuck,) = by_rule(data, "QU002")
    assert stuck["evidence"]["count"] == 1 and stuck["evidence"]["retry_after_seconds"] == 3600
    assert "redeliver" in stuck["summary"] and "messenger:stop-workers" in stuck["fix"]
    (failed,) = by_rule(data, "QU004")
    assert failed["evidence"]["count"] == 4 and failed["evidence"]["exception"] == "RuntimeException"
    assert failed["evidence"]["job_class"] == "Boom" and "messenger:failed:retry" in failed["fix"]
    assert not by_rule(data, "DW001")
