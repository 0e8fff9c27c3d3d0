"""Celery 5.5 with kombu's SQLAlchemy transport (broker tables kombu_queue / kombu_message)
and the SQLAlchemy result backend (celery_taskmeta), driven by its own code: .delay()
enqueues, the celery worker (threads pool) runs.

Usage: celery_app.py CELL   (healthy | backlog | failed | stuck)
kombu_message: a new message has visible = 1 and timestamp NULL (the column is only set ON
UPDATE); a worker's fetch sets visible = 0 (timestamp = the fetch, local time) and nothing
ever deletes or redelivers it: a finished message and one a killed worker held look the same.
Failures: celery_taskmeta status 'FAILURE' with the traceback (retries exhausted:
autoretry_for, max_retries=1, countdown 0).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import sqlalchemy
from celery import Celery
from common import DB, ENGINE, kill_when, wait_for

if ENGINE == "mariadb":
    BASE = f"mysql+pymysql://root@127.0.0.1:3306/{DB}"
else:
    BASE = f"postgresql+psycopg2://postgres@127.0.0.1:5432/{DB}"
app = Celery("celery_app", broker=f"sqla+{BASE}", backend=f"db+{BASE}")
app.conf.update(task_default_queue="default", broker_connection_retry_on_startup=True,
                worker_hijack_root_logger=False, result_extended=True)


@app.task(name="ok")
def ok() -> None:
    pass


@app.task(name="boom", autoretry_for=(RuntimeError,), max_retries=1, default_retry_delay=0)
def boom() -> None:
    raise RuntimeError("boom")


@app.task(name="slow", queue="slow")
def slow() -> None:
    time.sleep(600)


def count(sql: str) -> int:
    engine = sqlalchemy.create_engine(BASE)
    try:
        with engine.connect() as c:
            try:
                return int(c.execute(sqlalchemy.text(sql)).scalar_one())
            except sqlalchemy.exc.ProgrammingError:
                return -1  # the backend's table is created on the first result
    finally:
        engine.dispose()


def worker(queue: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "celery_app", "worker", "-P", "threads",
            "-c", "3", "-Q", queue, "--without-heartbeat", "--without-gossip",
            "--without-mingle", "-l", "WARNING"]


def run_until(queue: str, sql: str, n: int) -> None:
    proc = subprocess.Popen(worker(queue), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ), start_new_session=True)
    try:
        wait_for(sql, lambda: count(sql) == n)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # a warm shutdown
        proc.wait(30)


def main(cell: str) -> None:
    if cell == "healthy":
        for _ in range(5):
            ok.delay()
        run_until("default", "SELECT count(*) FROM celery_taskmeta WHERE status = 'SUCCESS'", 5)
    elif cell == "backlog":
        for _ in range(300):
            ok.delay()
    elif cell == "failed":
        for _ in range(10):
            boom.delay()
        run_until("default", "SELECT count(*) FROM celery_taskmeta WHERE status = 'FAILURE'", 10)
    elif cell == "stuck":
        for _ in range(3):
            slow.delay()
        kill_when(worker("slow"),
                  lambda: count("SELECT count(*) FROM kombu_message WHERE visible = false") == 3,
                  "3 fetched slow messages")
    else:
        raise SystemExit(f"unknown cell {cell}")


if __name__ == "__main__":
    main(sys.argv[1])
