"""The moving parts of the MVCC scenario: a que_jobs-like table, a producer at a steady rate,
workers claiming with FOR UPDATE SKIP LOCKED, and the long REPEATABLE READ "analytics" session.

Producer and workers are processes (each with its own connection) so that the client's GIL does
not set the pace; they report through a multiprocessing queue.
"""
from __future__ import annotations

import signal
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import tuple_row

QUEUE = "default"
WORKER_APP = "queue-worker"
PRODUCER_APP = "queue-producer"
ANALYTICS_APP = "analytics-report"


def create_table(conn: psycopg.Connection[Any], table: str, fill: int, payload: int) -> None:
    """Que's columns (so dbwatch recognises a Que table), its poll index, a standing backlog."""
    t = sql.Identifier(table)
    conn.execute(sql.SQL(
        "CREATE TABLE {} (id bigserial PRIMARY KEY, priority smallint NOT NULL DEFAULT 100,"
        " run_at timestamptz NOT NULL DEFAULT now(), job_class text NOT NULL,"
        " args jsonb NOT NULL DEFAULT '[]', error_count integer NOT NULL DEFAULT 0,"
        " last_error_message text, queue text NOT NULL DEFAULT 'default',"
        " finished_at timestamptz, expired_at timestamptz)").format(t))
    conn.execute(sql.SQL("CREATE INDEX {} ON {} (queue, priority, run_at, id)").format(
        sql.Identifier(f"{table}_poll_idx"), t))
    if fill:
        insert_jobs(conn, table, fill, payload)
    conn.execute(sql.SQL("ANALYZE {}").format(t))


def insert_jobs(conn: psycopg.Connection[Any], table: str, n: int, payload: int) -> None:
    conn.execute(sql.SQL(
        "INSERT INTO {} (job_class, args) SELECT 'SendInvoiceJob', jsonb_build_array(g, %s::text)"
        " FROM generate_series(1, %s) g").format(sql.Identifier(table)), ("x" * payload, n))


def _quiet_child() -> None:
    # Ctrl-C reaches the whole process group; the parent stops children through the Event.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _lost(out: Queue[tuple[str, Any]], who: str, exc: Exception) -> None:
    """A real worker reconnects when its connection is cut; so do these, and say so."""
    out.put(("lost", (who, time.monotonic(), str(exc).strip().splitlines()[0][:200])))
    time.sleep(0.2)


def producer(url: str, table: str, rate: float, payload: int, stop: Event,
             out: Queue[tuple[str, Any]]) -> None:
    """Insert `rate` jobs a second in small batches on a fixed schedule (catching up if late)."""
    _quiet_child()
    tick, owed, sent = 0.05, 0.0, 0
    next_at = time.monotonic()
    while not stop.is_set():
        try:
            with psycopg.connect(url, autocommit=True, application_name=PRODUCER_APP) as conn:
                while not stop.is_set():
                    owed += rate * tick
                    n = int(owed)
                    if n:
                        insert_jobs(conn, table, n, payload)
                        owed -= n
                        sent += n
                    out.put(("produced", (time.monotonic(), sent)))
                    next_at += tick
                    time.sleep(max(0.0, next_at - time.monotonic()))
        except psycopg.OperationalError as exc:
            _lost(out, "producer", exc)


def worker(url: str, table: str, stop: Event, out: Queue[tuple[str, Any]]) -> None:
    """Claim the next job with SKIP LOCKED, delete it, commit; report each claim's wall time."""
    _quiet_child()
    t = sql.Identifier(table)
    claim = sql.SQL("SELECT id, job_class, args FROM {} WHERE queue = %s AND run_at <= now()"
                    " ORDER BY priority, run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED").format(t)
    delete = sql.SQL("DELETE FROM {} WHERE id = %s").format(t)
    while not stop.is_set():
        batch: list[tuple[float, float, int]] = []
        try:
            with psycopg.connect(url, application_name=WORKER_APP) as conn:
                _work(conn, claim, delete, stop, out, batch)
        except psycopg.OperationalError as exc:
            _lost(out, "worker", exc)
        finally:
            if batch:
                out.put(("claims", batch))


def _work(conn: psycopg.Connection[Any], claim: sql.Composed, delete: sql.Composed, stop: Event,
          out: Queue[tuple[str, Any]], batch: list[tuple[float, float, int]]) -> None:
    cur = conn.cursor(row_factory=tuple_row)
    last_sent = time.monotonic()
    while not stop.is_set():
        t0 = time.perf_counter()
        cur.execute(claim, (QUEUE,), prepare=True)
        row = cur.fetchone()
        ms = (time.perf_counter() - t0) * 1000.0
        if row is not None:
            cur.execute(delete, (row[0],), prepare=True)
            conn.commit()
        else:
            conn.rollback()
            time.sleep(0.01)   # empty queue: poll again shortly, as a worker would
        now = time.monotonic()
        batch.append((now, ms, 1 if row is not None else 0))
        if now - last_sent >= 0.25:
            out.put(("claims", list(batch)))
            batch.clear()
            last_sent = now


class Analytics:
    """The forgotten report: REPEATABLE READ, one SELECT to take the snapshot, then idle."""

    def __init__(self, url: str, table: str) -> None:
        self.conn = psycopg.connect(url, application_name=ANALYTICS_APP)
        self.conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        row = self.conn.execute(
            sql.SQL("SELECT count(*), min(run_at) FROM {}").format(sql.Identifier(table))
        ).fetchone()
        self.rows_seen = int(row[0]) if row else 0
        self.pid = self.conn.info.backend_pid

    def close(self) -> None:
        try:
            if not self.conn.closed:
                self.conn.rollback()
        except psycopg.Error:
            pass        # terminated by dbwatch: the connection is already dead
        finally:
            self.conn.close()
