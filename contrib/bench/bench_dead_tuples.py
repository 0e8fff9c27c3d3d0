"""Benchmark the PG202 dead-tuple probe on a database with many tables; prints JSON.

    python contrib/bench/bench_dead_tuples.py [--url URL] [--tables 10000] [--runs 5]

Without --url it starts a throwaway cluster (contrib/bench/pgcluster.py), so nothing else
on the machine can disturb the run or be disturbed by it. In it (or on --url) it creates a
throwaway database (dropped at the end) with N tables, some with dead tuples,
then times the probe's one statement: server time from EXPLAIN (ANALYZE, BUFFERS) and
client round trip, and the rows it returns (bounded by its LIMIT whatever N is).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg

from dbwatch.probes import sql
from dbwatch.probes.pg_mvcc import DEAD_LIMIT, DEAD_MIN, QUEUE_NAMES, QUEUE_PATTERN, dead_tuple_rows
from dbwatch.targets import open_target, spec_for

PARAMS = {"queue_names": QUEUE_NAMES, "queue_pattern": QUEUE_PATTERN, "min_dead": DEAD_MIN,
          "limit": DEAD_LIMIT}


def build(url: str, tables: int, dirty: int) -> None:
    with psycopg.connect(url, autocommit=True) as c:
        for start in range(0, tables, 1000):
            c.execute(f"""DO $$ BEGIN FOR i IN {start}..{min(start + 1000, tables) - 1} LOOP
                EXECUTE format('CREATE TABLE t_%s (id int PRIMARY KEY, v text)', i); END LOOP; END $$""")
        c.execute("CREATE TABLE que_jobs (job_id bigserial PRIMARY KEY, queue text, args jsonb)")
        c.execute(f"""DO $$ BEGIN FOR i IN 0..{dirty - 1} LOOP
            EXECUTE format('INSERT INTO t_%s SELECT g, ''x'' FROM generate_series(1, 20 + %s) g', i, i);
            EXECUTE format('DELETE FROM t_%s', i); END LOOP; END $$""")
        c.execute("INSERT INTO que_jobs (queue) SELECT 'default' FROM generate_series(1, 3000)")
        c.execute("DELETE FROM que_jobs")
    time.sleep(1.5)     # let the backend's table statistics reach the shared stats


def measure(url: str, runs: int) -> dict[str, Any]:
    conn = open_target(spec_for(url, "bench"))
    text = sql("postgresql", "dead_tuples", conn.version_num)
    server_ms, client_ms, rows, buffers = [], [], [], 0
    try:
        for _ in range(runs):
            t0 = time.perf_counter()
            got = dead_tuple_rows(conn)
            client_ms.append((time.perf_counter() - t0) * 1000)
            rows.append(len(got))
            plan = conn.rows("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + text, PARAMS)
            doc = plan[0]["QUERY PLAN"][0]
            server_ms.append(float(doc["Execution Time"]) + float(doc.get("Planning Time", 0)))
            top = doc["Plan"]
            buffers = int(top.get("Shared Hit Blocks", 0)) + int(top.get("Shared Read Blocks", 0))
        first = got[0] if got else {}
    finally:
        conn.close()
    return {"server_ms_median": round(statistics.median(server_ms), 2),
            "server_ms_max": round(max(server_ms), 2),
            "client_ms_median": round(statistics.median(client_ms), 2),
            "rows_fetched": rows[-1], "row_limit": DEAD_LIMIT, "shared_buffers_touched": buffers,
            "first_row": {"table": first.get("table"), "n_dead_tup": first.get("n_dead_tup"),
                          "queue": first.get("queue")}}


@contextlib.contextmanager
def server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    sys.path.insert(0, str(Path(__file__).parent))
    from pgcluster import PgCluster
    with PgCluster(settings={"fsync": "off", "autovacuum": "off"}) as pg:
        yield pg.url


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="an existing server (default: a throwaway cluster)")
    ap.add_argument("--tables", type=int, default=10000)
    ap.add_argument("--dirty", type=int, default=300, help="tables given dead tuples")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with server(args.url) as url:
        run(url, args)


def run(url: str, args: argparse.Namespace) -> None:
    db = f"dbwatch_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {db}")
    bench_url = url.rsplit("/", 1)[0] + f"/{db}"
    try:
        t0 = time.perf_counter()
        build(bench_url, args.tables, args.dirty)
        setup_s = time.perf_counter() - t0
        result = measure(bench_url, args.runs)
        with psycopg.connect(bench_url) as c:
            n = c.execute("SELECT count(*) FROM pg_stat_user_tables").fetchone()
        print(json.dumps({"probe": "pg.dead_tuples", "server": "throwaway cluster"
                          if not args.url else "--url", "tables": n[0] if n else None,
                          "tables_with_dead_tuples": args.dirty + 1, "runs": args.runs,
                          "setup_seconds": round(setup_s, 1), **result}, indent=2))
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


if __name__ == "__main__":
    main()
