"""Benchmark: server time of the queue probes on a big Laravel jobs table (default 1,000,000
rows) and failed_jobs table (default 100,000 rows), on the local MariaDB and PostgreSQL.
Tables are built with INSERT ... SELECT from a sequence in a throwaway database, dropped after.
Prints JSON: per engine and query, wall and server milliseconds (ANALYZE FORMAT=JSON on
MariaDB, EXPLAIN ANALYZE on PostgreSQL), and the whole probe (discovery included).

    python contrib/bench/bench_queue.py
    python contrib/bench/bench_queue.py --jobs 200000 --failed 20000 --engines mysql
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

import psycopg
import pymysql

from dbwatch.probes import sql
from dbwatch.probes.queue import (
    ASPECTS,
    FAILED_WINDOW,
    GROUPS,
    HORIZON,
    WINDOW,
    _bounds,
    _has_sql,
    _render,
    collect,
)
from dbwatch.targets import open_target, spec_for

MY = {"host": "127.0.0.1", "port": 3306, "user": "root", "password": ""}
PG = "postgresql://postgres@127.0.0.1:5432/test"
PAYLOAD = json.dumps({"uuid": "9f1c", "displayName": "App\\Jobs\\%s",
                      "job": "Illuminate\\Queue\\CallQueuedHandler@call", "maxTries": None,
                      "timeout": None, "data": {"commandName": "x", "command": "O:8:" + "x" * 400}},
                     separators=(",", ":"))
TRACE = "\n".join(f"#{i} /app/vendor/laravel/framework/src/Illuminate/Foo.php({i}): bar()"
                  for i in range(40))

MY_BUILD = [
    ("CREATE TABLE jobs (id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY, queue varchar(255)"
    " NOT NULL, payload longtext NOT NULL, attempts tinyint unsigned NOT NULL, reserved_at int"
    " unsigned NULL, available_at int unsigned NOT NULL, created_at int unsigned NOT NULL,"
    " KEY jobs_queue_index (queue)) DEFAULT CHARSET utf8mb4"),
    ("CREATE TABLE failed_jobs (id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY, uuid"
    " varchar(255) NOT NULL, connection text NOT NULL, queue text NOT NULL, payload longtext NOT"
    " NULL, exception longtext NOT NULL, failed_at timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,"
    " UNIQUE KEY failed_jobs_uuid_unique (uuid)) DEFAULT CHARSET utf8mb4"),
    ("INSERT INTO jobs (queue, payload, attempts, reserved_at, available_at, created_at)"
    " SELECT ELT(1 + seq %% 4, 'default', 'mail', 'reports', 'low'),"
    " REPLACE(%(payload)s, '%%s', ELT(1 + seq %% 3, 'A', 'B', 'C')),"
    " IF(seq %% 500 = 0, 3, IF(seq %% 100 = 0, 2, 0)),"
    " IF(seq %% 200 = 0, UNIX_TIMESTAMP() - 3600, NULL), UNIX_TIMESTAMP() - 7200 + seq %% 7000,"
    " UNIX_TIMESTAMP() - 7200 FROM seq_1_to_%(jobs)s"),
    ("INSERT INTO failed_jobs (uuid, connection, queue, payload, exception, failed_at)"
    " SELECT UUID(), 'database', 'default', REPLACE(%(payload)s, '%%s', ELT(1 + seq %% 3, 'A', 'B', 'C')),"
    " CONCAT('Illuminate\\\\Queue\\\\MaxAttemptsExceededException: App\\\\Jobs\\\\A has been attempted"
    " too many times.', CHAR(10), %(trace)s), NOW() - INTERVAL (%(failed)s - seq) * 2 SECOND"
    " FROM seq_1_to_%(failed)s"),
    "ANALYZE TABLE jobs, failed_jobs",
]
PG_BUILD = [
    ("CREATE TABLE jobs (id bigserial PRIMARY KEY, queue varchar(255) NOT NULL, payload text NOT"
    " NULL, attempts smallint NOT NULL, reserved_at integer, available_at integer NOT NULL,"
    " created_at integer NOT NULL)"),
    "CREATE INDEX jobs_queue_index ON jobs (queue)",
    ("CREATE TABLE failed_jobs (id bigserial PRIMARY KEY, uuid varchar(255) NOT NULL UNIQUE,"
    " connection text NOT NULL, queue text NOT NULL, payload text NOT NULL, exception text NOT"
    " NULL, failed_at timestamp(0) NOT NULL DEFAULT CURRENT_TIMESTAMP)"),
    ("INSERT INTO jobs (queue, payload, attempts, reserved_at, available_at, created_at)"
    " SELECT (ARRAY['default', 'mail', 'reports', 'low'])[1 + s %% 4],"
    " replace(%(payload)s, '%%s', (ARRAY['A', 'B', 'C'])[1 + s %% 3]),"
    " CASE WHEN s %% 500 = 0 THEN 3 WHEN s %% 100 = 0 THEN 2 ELSE 0 END,"
    " CASE WHEN s %% 200 = 0 THEN extract(epoch FROM now())::int - 3600 END,"
    " extract(epoch FROM now())::int - 7200 + s %% 7000, extract(epoch FROM now())::int - 7200"
    " FROM generate_series(1, %(jobs)s) s"),
    ("INSERT INTO failed_jobs (uuid, connection, queue, payload, exception, failed_at)"
    " SELECT gen_random_uuid()::text, 'database', 'default',"
    " replace(%(payload)s, '%%s', (ARRAY['A', 'B', 'C'])[1 + s %% 3]),"
    " 'Illuminate\\Queue\\MaxAttemptsExceededException: App\\Jobs\\A has been attempted too many"
    " times.' || chr(10) || %(trace)s, localtimestamp - make_interval(secs => (%(failed)s - s) * 2)"
    " FROM generate_series(1, %(failed)s) s"),
    "ANALYZE jobs", "ANALYZE failed_jobs",
]


def server_ms(engine: str, cur: Any, text: str, params: dict[str, Any]) -> float:
    if engine == "mysql":
        cur.execute("ANALYZE FORMAT=JSON " + text, params)
        plan = json.loads(next(iter(cur.fetchone().values())))
        return float(plan["query_block"].get("r_total_time_ms", 0.0))
    cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + text, params)
    plan = next(iter(cur.fetchone().values()))     # the probe session returns dict rows
    plan = plan if isinstance(plan, list) else json.loads(plan)
    return float(plan[0]["Execution Time"])


def measure(engine: str, target: Any, schema: str, repeat: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    conn, version = target.conn, target.version_num
    params: dict[str, Any] = {"window": WINDOW, "groups": GROUPS, "horizon": HORIZON}
    for kind, table in (("laravel_jobs", "jobs"), ("laravel_failed", "failed_jobs")):
        t = {"schema": schema, "table": table, "kind": kind, "siblings": {}}
        if engine == "mysql":      # as the probe does: the id window first, as constants
            t0 = time.perf_counter()
            params |= _bounds(target, t)
            params.pop("beyond_window")
            out[f"{table}.bounds"] = {"wall_ms": round((time.perf_counter() - t0) * 1000, 1)}
        for aspect in ASPECTS:
            name = f"queue_{kind}_{aspect}"
            if not _has_sql(engine, name):
                continue
            text = _render(sql(engine, name, version), engine, t)
            params["window"] = FAILED_WINDOW if aspect == "failed" else WINDOW
            walls, servers = [], []
            for _ in range(repeat):
                cur = conn.cursor()
                t0 = time.perf_counter()
                cur.execute(text, params)
                cur.fetchall()
                walls.append((time.perf_counter() - t0) * 1000)
                servers.append(server_ms(engine, cur, text, params))
            out[f"{table}.{aspect}"] = {"wall_ms": round(statistics.median(walls), 1),
                                        "server_ms": round(statistics.median(servers), 1)}
    return out


def bench(engine: str, jobs: int, failed: int, repeat: int) -> dict[str, Any]:
    db = f"dbwq_bench_{os.getpid()}"
    fill = {"jobs": jobs, "failed": failed, "payload": PAYLOAD, "trace": TRACE}
    if engine == "mysql":
        admin = pymysql.connect(**MY, autocommit=True)
        admin.cursor().execute(f"CREATE DATABASE {db}")
        admin.select_db(db)
        url, run = f"mysql://root@127.0.0.1:3306/{db}", admin.cursor().execute
    else:
        admin = psycopg.connect(PG, autocommit=True)
        admin.execute(f"CREATE DATABASE {db}")
        conn = psycopg.connect(PG.rsplit("/", 1)[0] + f"/{db}", autocommit=True)
        url, run = PG.rsplit("/", 1)[0] + f"/{db}", conn.execute
    try:
        t0 = time.perf_counter()
        for stmt in (MY_BUILD if engine == "mysql" else PG_BUILD):
            run(stmt, fill if "%(" in stmt else None)
        built = time.perf_counter() - t0
        target = open_target(spec_for(url))
        try:
            t0 = time.perf_counter()
            data = collect(target)
            probe_s = time.perf_counter() - t0
            note = getattr(data, "message", None)      # PartialResult: some table failed
            data = getattr(data, "data", data)
            schema = db if engine == "mysql" else "public"
            # the probe's own session: read-only, statement timeout set
            queries = measure(engine, target, schema, repeat)
        finally:
            target.close()
        return {"engine": target.flavour, "jobs_rows": jobs, "failed_rows": failed,
                "build_seconds": round(built, 1), "probe_seconds": round(probe_s, 3),
                "tables_probed": data["probed"], "probe_note": note, "queries": queries}
    finally:
        if engine == "mysql":
            admin.cursor().execute(f"DROP DATABASE {db}")
        else:
            conn.close()
            admin.execute(f"DROP DATABASE {db} WITH (FORCE)")
        admin.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1_000_000)
    ap.add_argument("--failed", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--engines", default="mysql,postgresql")
    args = ap.parse_args()
    results = [bench(e.strip(), args.jobs, args.failed, args.repeat)
               for e in args.engines.split(",") if e.strip()]
    print(json.dumps({"window_rows": WINDOW, "failed_window_rows": FAILED_WINDOW,
                      "load_average": os.getloadavg(), "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
