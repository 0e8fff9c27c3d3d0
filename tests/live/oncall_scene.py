"""A scene of our own for the on-call integrations' tests (issue 26): a PostgreSQL database and
a MariaDB database, each with a Laravel jobs table holding ready jobs, and a PostgreSQL session
idle in transaction after a write (it holds the xmin horizon). Everything is dropped after."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
import pymysql

from conftest import MY_URL, PG_URL

JOBS = (
    "CREATE TABLE jobs (id bigserial primary key, queue varchar(255) not null,"
    " payload text not null, attempts smallint not null, reserved_at int,"
    " available_at int not null, created_at int not null)"
)
MY_JOBS = (
    "CREATE TABLE jobs (id bigint unsigned auto_increment primary key,"
    " queue varchar(255) not null, payload longtext not null,"
    " attempts tinyint unsigned not null, reserved_at int unsigned,"
    " available_at int unsigned not null, created_at int unsigned not null,"
    " KEY jobs_queue_index (queue))"
)


@dataclass(frozen=True)
class Scene:
    name: str
    pg_url: str  # scoped to the scene's own database
    my_url: str
    idle_pid: int


def _base(url: str) -> str:
    return url.rsplit("/", 1)[0]


@contextmanager
def scene(jobs: int = 25, my: bool = True) -> Iterator[Scene]:
    name = f"dbw_oncall_{uuid.uuid4().hex[:8]}"
    admin = psycopg.connect(PG_URL, autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    pg_url = f"{_base(PG_URL)}/{name}"
    my_url = f"{_base(MY_URL)}/{name}"
    myc = None
    idle = None
    try:
        now = int(time.time()) - 120  # ready for two minutes: the oldest job has an age
        with psycopg.connect(pg_url, autocommit=True) as c:
            c.execute(JOBS)
            for i in range(jobs):
                c.execute(
                    "INSERT INTO jobs (queue, payload, attempts, available_at, created_at)"
                    " VALUES ('default', %s, 0, %s, %s)",
                    (f'{{"job": {i}}}', now, now),
                )
        if my:
            myc = pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)
            cur = myc.cursor()
            cur.execute(f"CREATE DATABASE `{name}`")
            cur.execute(f"USE `{name}`")
            cur.execute(MY_JOBS)
            for i in range(jobs):
                cur.execute(
                    "INSERT INTO jobs (queue, payload, attempts, available_at, created_at)"
                    " VALUES ('default', %s, 0, %s, %s)",
                    (f'{{"job": {i}}}', now, now),
                )
        idle = psycopg.connect(pg_url, application_name="oncall-idle")
        idle.execute("UPDATE jobs SET attempts = attempts WHERE id = 1")  # a write: holds an xid
        with psycopg.connect(pg_url, autocommit=True) as c:  # dead tuples the horizon keeps
            c.execute("UPDATE jobs SET payload = payload WHERE id > 1")
        yield Scene(name, pg_url, my_url, idle.info.backend_pid)
    finally:
        if idle is not None:
            idle.close()
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()
        if myc is not None:
            myc.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")
            myc.close()
