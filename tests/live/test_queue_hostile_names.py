"""Hostile catalog names (issue 18.1) on the real servers: a table named to inject SQL through the
queue probe's sibling-table placeholders, plus quotes, backticks, comment marks, `%s`, braces,
newlines and unicode in schema and table names. The audit names each table exactly, counts its
jobs exactly, and runs nothing else: a canary session of the same server stays alive.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pymysql
import pytest
from psycopg import sql

PG = "host=127.0.0.1 port=5432 user=postgres dbname=test"


def _audit(url: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "dbwatch", "audit", url, "--format", "json"],
        capture_output=True, text=True, timeout=120, env=dict(os.environ),
    )
    assert out.stdout.strip(), out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def _backlog(data: dict[str, Any]) -> dict[str, int]:
    return {f["evidence"]["table"]: f["evidence"]["depth"] for f in data["findings"]
            if f["rule"] == "QU001"}


@pytest.fixture
def pg_db(uniq: str) -> Iterator[str]:
    name = f"dbw_hostile_{uniq}"
    with psycopg.connect(PG, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield name
    with psycopg.connect(PG, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def test_pg_hostile_names_are_data(pg_db: str) -> None:
    canary = psycopg.connect(f"host=127.0.0.1 user=postgres dbname={pg_db}", autocommit=True)
    pid = canary.execute("SELECT pg_backend_pid()").fetchone()[0]  # type: ignore[index]
    old = time.time() - 3600
    schema = "s\"'`*/--{table}%s\nü"
    # graphile-worker shape: the sibling tables are named from the jobs table's stem, the
    # measured attack (a {tasks} placeholder inside the name, then a kill in a comment break)
    stem = f"x{{tasks}}*/,pg_terminate_backend({pid})--"
    laravel = "jobs\"; SELECT pg_terminate_backend(" + str(pid) + "); --%(window)s ü"
    with psycopg.connect(f"host=127.0.0.1 user=postgres dbname={pg_db}", autocommit=True) as c:
        c.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        jobs, tasks, queues = (sql.Identifier(schema, stem + s) for s in
                               ("jobs", "tasks", "job_queues"))
        c.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, identifier text)").format(tasks))
        c.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, queue_name text, locked_at "
                          "timestamptz, locked_by text)").format(queues))
        c.execute(sql.SQL(
            "CREATE TABLE {} (id bigint PRIMARY KEY, job_queue_id int, task_id int, payload json,"
            " priority int DEFAULT 0, run_at timestamptz, attempts int DEFAULT 0,"
            " max_attempts int DEFAULT 25, last_error text, locked_at timestamptz,"
            " locked_by text, key text, created_at timestamptz DEFAULT now(),"
            " updated_at timestamptz DEFAULT now(), is_available boolean GENERATED ALWAYS AS"
            " (locked_at IS NULL AND attempts < max_attempts) STORED)").format(jobs))
        c.execute(sql.SQL("INSERT INTO {} SELECT g, NULL, 1, '{{}}', 0, to_timestamp({}) "
                          "FROM generate_series(1, 7) g").format(jobs, sql.Literal(old)))
        lj = sql.Identifier(schema, laravel)
        c.execute(sql.SQL(
            "CREATE TABLE {} (id bigserial PRIMARY KEY, queue varchar(255), payload text,"
            " attempts smallint, reserved_at int, available_at int, created_at int)").format(lj))
        c.execute(sql.SQL("INSERT INTO {lj} (queue, payload, attempts, available_at, created_at) "
                          "SELECT 'default', '{{}}', 0, {t}, {t} FROM generate_series(1, 9)")
                  .format(lj=lj, t=sql.Literal(int(old))))
    data = _audit(f"postgresql://postgres@127.0.0.1:5432/{pg_db}")
    assert canary.execute("SELECT 1").fetchone() == (1,), "the canary session was terminated"
    canary.close()
    backlog = _backlog(data)
    assert backlog[f"{schema}.{stem}jobs"] == 7
    assert backlog[f"{schema}.{laravel}"] == 9
    assert not [f for f in data["findings"] if f["rule"] == "DW001"], data["findings"]


@pytest.fixture
def my_db(uniq: str) -> Iterator[str]:
    name = f"dbw_h`'\"*/--{{table}}%s ü_{uniq}"
    conn = pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)
    q = "`" + name.replace("`", "``") + "`"
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE {q}")
    yield name
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE {q}")
    conn.close()


def test_mariadb_hostile_names_are_data(my_db: str) -> None:
    canary = pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)
    with canary.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID()")
        tid = cur.fetchone()[0]  # type: ignore[index]
    table = f"jobs` WHERE 0; KILL {tid}; -- */{{table}}%s ü"
    ident = "`" + my_db.replace("`", "``") + "`.`" + table.replace("`", "``") + "`"
    now = int(time.time()) - 3600
    conn = pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)
    with conn.cursor() as cur:
        cur.execute((f"CREATE TABLE {ident} (id bigint unsigned AUTO_INCREMENT PRIMARY KEY,"
                     " queue varchar(255) NOT NULL, payload longtext NOT NULL, attempts tinyint"
                     " unsigned NOT NULL, reserved_at int unsigned NULL, available_at int unsigned"
                     " NOT NULL, created_at int unsigned NOT NULL, KEY q (queue))"))
        for _ in range(5):
            cur.execute(f"INSERT INTO {ident} (queue, payload, attempts, available_at, created_at)"
                        .replace("%", "%%") + " VALUES ('default', '{}', 0, %s, %s)", (now, now))
    conn.close()
    from urllib.parse import quote
    data = _audit(f"mysql://root@127.0.0.1:3306/{quote(my_db, safe='')}")
    with canary.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchone() == (1,), "the canary session was killed"
    canary.close()
    assert _backlog(data) == {f"{my_db}.{table}": 5}
