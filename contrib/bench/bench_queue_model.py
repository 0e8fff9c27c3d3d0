"""Benchmark: the one queue model's cost on the local MariaDB and PostgreSQL.

1. Recognition by shape: the queue catalog query (discover_tables: one query, no per-table
   round trip for non-candidates) on a throwaway database with --tables application tables
   (default 5,000: ids, statuses, timestamps, JSON data — the columns the model's role names
   also match) plus a few queue-shaped ones. Median of --runs.
   MySQL/MariaDB also: the catalog statement alone with the role names in every spelling vs
   one, and the read of the candidates' columns.
2. The generic queries on a --rows (default 1,000,000) job table no library knows (a text
   status with an index, run_at, locked_at/locked_by, failed_at, attempts): each aspect's wall
   time cold (right after the bulk load, no ANALYZE, autovacuum off: the first run) and after
   ANALYZE (median of --runs): two bounded windows of rows, whatever the table's size.

    python contrib/bench/bench_queue_model.py --throwaway
    python contrib/bench/bench_queue_model.py --tables 1000 --rows 100000 --engines postgresql
    python contrib/bench/bench_queue_model.py --smoke       # CI: 50 tables, 5,000 rows
    python contrib/bench/bench_queue_model.py --throwaway --backlog --tables 50  # 999,000 queued

--throwaway runs PostgreSQL in a cluster of its own (contrib/bench/pgcluster.py, autovacuum
off); the MariaDB database is created on the shared server under a unique name and dropped.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pymysql

sys.path.insert(0, os.environ.get("DBWATCH_BENCH_ROOT") or str(Path(__file__).resolve().parents[2]))
sys.path.insert(1, str(Path(__file__).resolve().parent))

from bench_queue_libs import _backend_cpu_ns, _my_thread, _thread_cpu  # noqa: E402
from dbwatch.errors import ProbeError
from dbwatch.probes import sql
from dbwatch.probes.queue import discover_tables
from dbwatch.probes import queue_generic as _generic
from dbwatch.probes.queue_generic import WINDOW, _bind, fragments
from dbwatch.probes.queue_sql import compose
from dbwatch.queues import CATALOG_COLUMNS, MARKER_COLUMNS
from dbwatch.queues.roles import ROLES
from dbwatch.queues.statuses import map_statuses
from dbwatch.targets import open_target, spec_for

# MySQL/MariaDB's indexed status values read by index dives (absent before: DBWATCH_BENCH_ROOT)
INDEX_VALUES = getattr(_generic, "_my_index_values", None)
MY = {"host": "127.0.0.1", "port": 3306, "user": "root", "password": ""}
PG = ["postgresql://postgres@127.0.0.1:5432/postgres"]  # the throwaway cluster's replaces it
DB = f"dbw_bench_qmodel_{os.getpid()}"
QUEUED = [3000]  # the newest rows are 'queued' (--backlog: all but the first 1,000)

APP_TABLE = {
    "postgresql": ("CREATE TABLE t{i} (id bigserial PRIMARY KEY, name text, status text, "
                   "data jsonb, amount numeric(10,2), user_id bigint, created_at timestamptz, "
                   "updated_at timestamptz, processed_at timestamptz, notes text)"),
    "mysql": ("CREATE TABLE t{i} (id bigint AUTO_INCREMENT PRIMARY KEY, name varchar(100), "
              "status varchar(20), data json, amount decimal(10,2), user_id bigint, created_at "
              "datetime, updated_at datetime, processed_at datetime, notes text)"),
}
JOBS = {
    "postgresql": [
        ("CREATE TABLE task_queue (id bigserial PRIMARY KEY, task_name text NOT NULL, args jsonb,"
         " status text NOT NULL, run_at timestamptz NOT NULL, locked_at timestamptz, locked_by"
         " text, failed_at timestamptz, attempts int NOT NULL DEFAULT 0, last_error text,"
         " created_at timestamptz NOT NULL DEFAULT now())"),
        ("INSERT INTO task_queue (task_name, args, status, run_at, locked_at, locked_by,"
         " failed_at, attempts, last_error) SELECT 'app.t' || (g %% 7), '{}',"
         " CASE WHEN g > %(rows)s - %(queued)s THEN 'queued' WHEN g %% 1000 = 0 THEN 'failed'"
         " WHEN g %% 997 = 0 THEN 'running' ELSE 'done' END, now() - (g %% 7200) * interval '1 s',"
         " CASE WHEN g %% 997 = 0 THEN now() - interval '1 h' END,"
         " CASE WHEN g %% 997 = 0 THEN 'w1' END, CASE WHEN g %% 1000 = 0 THEN now() END,"
         " g %% 4, CASE WHEN g %% 1000 = 0 THEN 'ValueError: x' END"
         " FROM generate_series(1, %(rows)s) g"),
        "CREATE INDEX ON task_queue (status)",
        "CREATE INDEX ON task_queue (run_at)",
    ],
    "mysql": [
        ("CREATE TABLE task_queue (id bigint AUTO_INCREMENT PRIMARY KEY, task_name varchar(100)"
         " NOT NULL, args json, status varchar(20) NOT NULL, run_at datetime NOT NULL, locked_at"
         " datetime, locked_by varchar(64), failed_at datetime, attempts int NOT NULL DEFAULT 0,"
         " last_error text, created_at datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,"
         " KEY (status), KEY (run_at))"),
        ("INSERT INTO task_queue (task_name, args, status, run_at, locked_at, locked_by,"
         " failed_at, attempts, last_error) SELECT CONCAT('app.t', seq %% 7), '{}',"
         " CASE WHEN seq > %(rows)s - %(queued)s THEN 'queued' WHEN seq %% 1000 = 0 THEN 'failed'"
         " WHEN seq %% 997 = 0 THEN 'running' ELSE 'done' END, NOW() - INTERVAL (seq %% 7200) SECOND,"
         " IF(seq %% 997 = 0, NOW() - INTERVAL 1 HOUR, NULL), IF(seq %% 997 = 0, 'w1', NULL),"
         " IF(seq %% 1000 = 0, NOW(), NULL), seq %% 4, IF(seq %% 1000 = 0, 'ValueError: x', NULL)"
         " FROM seq_1_to_%(rows)s"),
    ],
}


def _admin(engine: str) -> Any:
    if engine == "postgresql":
        return psycopg.connect(PG[0], autocommit=True)
    return pymysql.connect(**MY, autocommit=True)


def build(engine: str, tables: int, rows: int) -> str:
    admin = _admin(engine)
    if engine == "postgresql":
        admin.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {DB}")
        admin.close()
        conn = psycopg.connect(PG[0].rsplit("/", 1)[0] + f"/{DB}", autocommit=True)
        run = conn.execute
    else:
        cur = admin.cursor()
        cur.execute(f"DROP DATABASE IF EXISTS {DB}")
        cur.execute(f"CREATE DATABASE {DB}")
        admin.select_db(DB)
        run = cur.execute
    for i in range(tables):
        run(APP_TABLE[engine].format(i=i))
    for stmt in JOBS[engine]:
        run(stmt % {"rows": rows, "queued": QUEUED[0]} if "%(rows)s" in stmt
            else stmt.replace("%%", "%"))
    url = (PG[0].rsplit("/", 1)[0] + f"/{DB}" if engine == "postgresql"
           else f"mysql://root@127.0.0.1:3306/{DB}")
    return url


def drop(engine: str) -> None:
    admin = _admin(engine)
    if engine == "postgresql":
        admin.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    else:
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {DB}")
    admin.close()


def _my_statements(conn: Any, runs: int) -> dict[str, Any]:
    """MariaDB/MySQL: the catalog statement alone with the role names in every spelling (what
    discover_tables sends) vs in one spelling, and the read of the candidates' columns."""
    one = tuple(sorted(set(MARKER_COLUMNS) | {n for ns in ROLES.values() for n in ns}))
    text = sql("mysql", "queue_tables_scoped", conn.version)
    cols = sql("mysql", "queue_generic_columns", conn.version)
    out: dict[str, list[float]] = {"all_spellings": [], "one_spelling": [], "candidate_columns": []}
    for _ in range(runs):
        for key, names in (("all_spellings", tuple(CATALOG_COLUMNS)), ("one_spelling", one)):
            t0 = time.perf_counter()
            conn.rows(text, {"markers": names, "schema": DB})
            out[key].append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        conn.rows(cols, {"schema": DB, "tables": ("task_queue",)})
        out["candidate_columns"].append((time.perf_counter() - t0) * 1000)
    out_names = {"names": [len(CATALOG_COLUMNS), len(one)]}
    return out_names | {k: [round(statistics.median(v), 1), round(min(v), 1)] for k, v in out.items()}


def _aspects(conn: Any, engine: str, g: Any, runs: int) -> dict[str, float | str]:
    """Wall ms of each generic query of the table (median of runs)."""
    frags = fragments(engine, g)
    statuses = map_statuses(["queued", "running", "failed", "done"])
    params = {"window": WINDOW, "groups": 500, "horizon": 7 * 86400,
              "values": 50} | _bind(statuses, False)
    ident = {"table": (g.schema, g.table)}
    rows_sql = compose(engine, sql(engine, "queue_generic_rows", conn.version), ident, frags)
    aspects: dict[str, float | str] = {}
    cpu: dict[str, float] = {}
    for name in ("values_indexed", "values", "summary", "reserved", "repeated", "failed"):
        text = sql(engine, f"queue_generic_{name}", conn.version)
        text = compose(engine, text, ident if name.startswith("values") else {},
                       frags if name.startswith("values") else
                       {"rows": rows_sql} | {k: frags[k] for k in ("join", "err", "kind")})
        ms, cpus = [], []
        for _ in range(runs):
            before = _cpu_ns(engine, conn)
            t0 = time.perf_counter()
            try:
                if name == "values_indexed" and engine == "mysql" and INDEX_VALUES:
                    INDEX_VALUES(conn, g, frags)  # one index dive per value (this branch)
                else:
                    conn.rows(text, params)
            except ProbeError as exc:  # a statement past the session's timeout: say so
                aspects[name] = f"failed: {exc.detail}"
                break
            ms.append((time.perf_counter() - t0) * 1000)
            after = _cpu_ns(engine, conn)
            if before is not None and after is not None:
                cpus.append((after - before) / 1e6)
        else:
            aspects[name] = round(statistics.median(ms), 1)
            if cpus:
                cpu[name] = round(statistics.median(cpus), 1)
    return aspects | {f"{k}_cpu": v for k, v in cpu.items()}


def _cpu_ns(engine: str, conn: Any) -> int | None:
    """The server's CPU time for this session (its backend / its MariaDB thread, /proc)."""
    if engine == "postgresql":
        return _backend_cpu_ns(conn.conn.info.backend_pid)
    return _thread_cpu(_my_thread(conn.conn))


def measure(engine: str, tables: int, rows: int, runs: int) -> dict[str, Any]:
    url = build(engine, tables, rows)
    try:
        conn = open_target(spec_for(url))
        times, found = [], None
        for _ in range(runs):
            t0 = time.perf_counter()
            found = discover_tables(conn, engine)
            times.append(time.perf_counter() - t0)
        assert found is not None
        (g,) = [t for t in found[2] if t.table == "task_queue"]
        cold = _aspects(conn, engine, g, 1)  # first run, no statistics (autovacuum off)
        conn.rows("ANALYZE TABLE task_queue" if engine == "mysql" else "ANALYZE task_queue")
        statements = _my_statements(conn, runs) if engine == "mysql" else {}
        warm = _aspects(conn, engine, g, runs)
        conn.close()
        return {
            "engine": engine,
            "tables": tables + 1,
            "recognition_ms_median": round(statistics.median(times) * 1000, 1),
            "recognition_ms_all": [round(t * 1000, 1) for t in times],
            "generic_candidates": [(t.key, t.reading.verdict) for t in found[2]],
            "catalog_statements_ms_median_min": statements,
            "job_rows": rows,
            "generic_query_ms_cold": cold,
            "generic_query_ms_median": warm,
        }
    finally:
        drop(engine)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", type=int, default=5000)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--engines", default="postgresql,mysql")
    ap.add_argument("--throwaway", action="store_true",
                    help="PostgreSQL in a cluster of its own (autovacuum off), not :5432")
    ap.add_argument("--smoke", action="store_true", help="CI: 50 tables, 5,000 rows, one run")
    ap.add_argument("--json", help="write the results here too")
    ap.add_argument("--backlog", action="store_true",
                    help="a backlog: every job row 'queued' but the first 1,000")
    args = ap.parse_args()
    if args.smoke:
        args.tables, args.rows, args.runs = 50, 5000, 1
    if args.backlog:
        QUEUED[0] = max(args.rows - 1000, 0)
    out = []

    def each() -> None:
        for engine in args.engines.split(","):
            out.append(measure(engine, args.tables, args.rows, args.runs))
            print(json.dumps(out[-1], indent=2), flush=True)

    if args.throwaway:
        from pgcluster import PgCluster

        settings = {"autovacuum": "off", "fsync": "off", "synchronous_commit": "off",
                    "shared_buffers": "256MB"}
        with PgCluster(settings) as cluster:
            PG[0] = cluster.url
            each()
    else:
        each()
    if args.json:
        Path(args.json).write_text(json.dumps({"load_average": os.getloadavg(), "results": out},
                                              indent=2))


if __name__ == "__main__":
    main()
