"""pq 1.9.1 (PostgreSQL transactional queue) driven by its own code: PQ.create() runs the
library's create.sql, a @queue.task enqueues, Queue.work() (the library's worker loop) runs.

Usage: pq_app.py CELL   (healthy | backlog | failed | stuck | worker-slow)
Table public.queue: one row per job; a claim sets dequeued_at in its own transaction and the
row is never touched again: a finished job, a failed one and one whose worker died all look the
same. A failed task with retries left is put again as a NEW row (max_retries=1, retry_in 0s);
when they are exhausted pq only logs the error.
"""

from __future__ import annotations

import sys
import threading
import time

import psycopg2
from common import kill_when, me, pg_dsn
from pq.tasks import PQ

conn = psycopg2.connect(pg_dsn())
pq = PQ(conn)
default = pq["default"]
slow_q = pq["slow"]


@default.task(max_retries=1, retry_in="0s")
def ok(job_id: int) -> None:
    pass


@default.task(max_retries=1, retry_in="0s")
def boom(job_id: int) -> None:
    raise RuntimeError("boom")


@slow_q.task()
def slow(job_id: int) -> None:
    time.sleep(600)


def count(where: str) -> int:
    with psycopg2.connect(pg_dsn()) as c, c.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM queue WHERE {where}")
        return int(cur.fetchone()[0])


def main(cell: str) -> None:
    if cell == "worker-slow":  # three workers (threads), each on its own connection
        for _ in range(3):
            q = PQ(psycopg2.connect(pg_dsn()))["slow"]
            threading.Thread(target=q.work, daemon=True).start()
        time.sleep(600)
        return
    pq.create()
    if cell == "healthy":
        for _ in range(5):
            ok()
        default.work(burst=True)
    elif cell == "backlog":
        for _ in range(300):
            ok()
    elif cell == "failed":
        for _ in range(10):
            boom()
        default.work(burst=True)  # each tried, put again once, tried again, then given up
    elif cell == "stuck":
        for _ in range(3):
            slow()
        kill_when([*me(), "worker-slow"],
                  lambda: count("q_name = 'slow' AND dequeued_at IS NOT NULL") == 3,
                  "3 dequeued slow jobs")
    else:
        raise SystemExit(f"unknown cell {cell}")


if __name__ == "__main__":
    main(sys.argv[1])
