"""dramatiq 1.17 with dramatiq-pg 0.12 (PostgreSQL broker) driven by its own code: the
schema from dramatiq_pg.schema.generate_init_sql(), actor.send() enqueues, dramatiq.Worker
(the library's worker threads) consumes.

Usage: dramatiq_app.py CELL   (healthy | backlog | failed | stuck | worker-slow)
Table dramatiq.queue: state queued -> consumed (mtime = claim time, a session advisory lock
held while running) -> done | rejected. A failed message (retries exhausted: max_retries=1) is
'rejected'. A consumed message whose worker died keeps 'consumed'; a worker that starts later
takes it again (its advisory lock is free). dramatiq's default actor time limit is 10 min.
"""

from __future__ import annotations

import sys
import time

import dramatiq
import psycopg2
from common import kill_when, me, pg_dsn, wait_for
from dramatiq_pg import PostgresBroker
from dramatiq_pg.schema import generate_init_sql

broker = PostgresBroker(url=pg_dsn(), results=False)
dramatiq.set_broker(broker)


@dramatiq.actor(queue_name="default", max_retries=1, min_backoff=1, max_backoff=10)
def ok() -> None:
    pass


@dramatiq.actor(queue_name="default", max_retries=1, min_backoff=1, max_backoff=10)
def boom() -> None:
    raise RuntimeError("boom")


@dramatiq.actor(queue_name="slow", max_retries=0)
def slow() -> None:
    time.sleep(600)


def count(where: str) -> int:
    with psycopg2.connect(pg_dsn()) as c, c.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM dramatiq.queue WHERE {where}")
        return int(cur.fetchone()[0])


def work(queues: set[str], until: str, n: int) -> None:
    worker = dramatiq.Worker(broker, queues=queues, worker_threads=4, worker_timeout=100)
    worker.start()
    try:
        wait_for(until, lambda: count(until) == n)
    finally:
        worker.stop()


def main(cell: str) -> None:
    if cell == "worker-slow":
        worker = dramatiq.Worker(broker, queues={"slow"}, worker_threads=4, worker_timeout=100)
        worker.start()
        time.sleep(600)
        return
    with psycopg2.connect(pg_dsn()) as c, c.cursor() as cur:
        cur.execute(generate_init_sql())
    if cell == "healthy":
        for _ in range(5):
            ok.send()
        work({"default"}, "state = 'done'", 5)
    elif cell == "backlog":
        for _ in range(300):
            ok.send()
    elif cell == "failed":
        for _ in range(10):
            boom.send()
        work({"default"}, "state = 'rejected'", 10)
    elif cell == "stuck":
        for _ in range(3):
            slow.send()
        kill_when([*me(), "worker-slow"], lambda: count("state = 'consumed'") == 3,
                  "3 consumed slow messages")
    else:
        raise SystemExit(f"unknown cell {cell}")


if __name__ == "__main__":
    main(sys.argv[1])
