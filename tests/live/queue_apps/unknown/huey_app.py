"""huey 3.5.4 with its SQL storage (huey.contrib.sql_huey, peewee) driven by its own code: the
storage creates its tables, @huey.task enqueues, huey's Consumer (thread workers) and
Huey.dequeue()/execute() (what a consumer worker does) run them.

Usage: huey_app.py CELL   (healthy | backlog | failed | stuck | worker-slow)
Tables: task (id, queue, data blob, priority) holds waiting tasks only, with no time at all;
a dequeue DELETEs the row, so a task a killed worker held is gone without a trace. Results and
errors go to kv (pickled), retries with a delay to schedule. retries=1, retry_delay=0.
"""

from __future__ import annotations

import sys
import time

import pymysql
from common import DB, ENGINE, kill_when, me
from huey.consumer import Consumer
from huey.contrib.sql_huey import SqlHuey
from peewee import MySQLDatabase, PostgresqlDatabase

if ENGINE == "mariadb":
    database = MySQLDatabase(DB, host="127.0.0.1", port=3306, user="root", password="")
else:
    database = PostgresqlDatabase(DB, host="127.0.0.1", port=5432, user="postgres")
huey = SqlHuey(name="app", database=database)


@huey.task(retries=1, retry_delay=0)
def ok() -> None:
    pass


@huey.task(retries=1, retry_delay=0)
def boom() -> None:
    raise RuntimeError("boom")


@huey.task()
def slow() -> None:
    time.sleep(600)


def drain() -> None:
    while (task := huey.dequeue()) is not None:
        huey.execute(task)


def waiting() -> int:
    return int(huey.storage.queue_size())


def main(cell: str) -> None:
    if cell == "worker-slow":
        Consumer(huey, workers=3, worker_type="thread", periodic=False).run()
        return
    if cell == "healthy":
        for _ in range(5):
            ok()
        drain()
    elif cell == "backlog":
        for _ in range(300):
            ok()
    elif cell == "failed":
        for _ in range(10):
            boom()
        drain()  # each tried, enqueued again once (retries=1), tried again, error stored in kv
    elif cell == "stuck":
        for _ in range(3):
            slow()
        assert waiting() == 3
        kill_when([*me(), "worker-slow"], lambda: waiting() == 0, "3 slow tasks dequeued")
    else:
        raise SystemExit(f"unknown cell {cell}")
    _ = pymysql


if __name__ == "__main__":
    main(sys.argv[1])
