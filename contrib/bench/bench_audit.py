"""Cost of one `dbwatch audit` on a busy catalogue: 5,000 tables and 300 idle sessions.

PostgreSQL: a throwaway cluster (max_connections=400, pg_stat_statements) so the shared
server is untouched and the server time is measured by the server itself.
MariaDB: a scratch database on the local server (max_connections raised and restored);
server time there is the client-observed time of each probe query on loopback.
Prints one JSON object. Usage: python contrib/bench/bench_audit.py [--tables 5000] [--sessions 300]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pymysql

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pgcluster import PgCluster

from dbwatch.catalogue import load_catalogue
from dbwatch.config import Config
from dbwatch.evaluate import Selection
from dbwatch.pipeline import probe_target
from dbwatch.targets import spec_for

RUNS = 5


def _audit(url: str) -> dict[str, Any]:
    catalogue, cfg, spec = load_catalogue(), Config(), spec_for(url)
    walls, results = [], []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        res = probe_target(spec, catalogue, cfg, Selection())
        walls.append(time.perf_counter() - t0)
        results.append(res)
        assert res.error is None, res.error
    last = results[-1]
    return {"wall_s_median": round(statistics.median(walls), 4), "wall_s_max": round(max(walls), 4),
            "probe_queries": last.stats.queries, "rows_fetched": last.stats.rows,
            "probe_query_s": round(last.stats.seconds, 4),
            "per_probe_s": last.stats.per_probe, "rules_run": len(last.evaluation.ran),
            "findings": len(last.evaluation.findings)}


def bench_pg(tables: int, sessions: int) -> dict[str, Any]:
    settings = {"max_connections": str(sessions + 50),
                "shared_preload_libraries": "'pg_stat_statements'", "pg_stat_statements.track": "all"}
    with PgCluster(settings) as cluster:
        admin = psycopg.connect(cluster.url, autocommit=True)
        admin.execute("CREATE EXTENSION pg_stat_statements")
        admin.execute(f"DO $$ BEGIN FOR i IN 1..{tables} LOOP EXECUTE format("
                      "'CREATE TABLE t%s (id serial primary key, queue text, v int)', i); "
                      "END LOOP; END $$")
        idle = [psycopg.connect(cluster.url, autocommit=True, application_name=f"idle{i}")
                for i in range(sessions)]
        for c in idle[: sessions // 10]:
            c.execute("BEGIN")       # a tenth idle in transaction: rows for PG001/PG002
            c.execute("SELECT 1")
        admin.execute("SELECT pg_stat_statements_reset()")
        out = _audit(cluster.url)
        row = admin.execute("SELECT count(*), sum(calls), sum(total_exec_time), sum(rows) "
                            "FROM pg_stat_statements WHERE query NOT LIKE '%%pg_stat_statements%%'"
                            ).fetchone()
        assert row is not None
        out.update({"server_statements_per_audit": round(float(row[1] or 0) / RUNS, 1),
                    "server_exec_ms_per_audit": round(float(row[2] or 0) / RUNS, 2),
                    "server_rows_per_audit": round(float(row[3] or 0) / RUNS, 1),
                    "tables": tables, "sessions": sessions,
                    "server_version": admin.info.parameter_status("server_version")})
        for c in idle:
            c.close()
        admin.close()
    return out


def bench_mariadb(tables: int, sessions: int) -> dict[str, Any]:
    admin = pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)
    cur = admin.cursor()
    cur.execute("SELECT @@max_connections, VERSION()")
    old_max, version = cur.fetchone()
    db = "dbw_bench_audit"
    idle: list[Any] = []
    try:
        cur.execute(f"SET GLOBAL max_connections = {max(int(old_max), sessions + 50)}")
        cur.execute(f"DROP DATABASE IF EXISTS {db}")
        cur.execute(f"CREATE DATABASE {db}")
        for i in range(tables):
            cur.execute(f"CREATE TABLE {db}.t{i} (id int primary key, queue varchar(64), v int)")
        for i in range(sessions):
            idle.append(pymysql.connect(host="127.0.0.1", user="root", password="", database=db))
        for c in idle[: sessions // 10]:
            c.begin()
            c.cursor().execute(f"SELECT * FROM {db}.t1 FOR UPDATE")
        out = _audit("mysql://root@127.0.0.1:3306/test")
        out.update({"tables": tables, "sessions": sessions, "server_version": version})
        return out
    finally:
        for c in idle:
            c.close()
        cur.execute(f"DROP DATABASE IF EXISTS {db}")
        cur.execute(f"SET GLOBAL max_connections = {int(old_max)}")
        admin.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tables", type=int, default=5000)
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--engine", choices=("both", "postgresql", "mariadb"), default="both")
    args = ap.parse_args()
    out: dict[str, Any] = {"runs": RUNS}
    if args.engine in ("both", "postgresql"):
        print("postgresql: building cluster, tables and sessions…", file=sys.stderr)
        out["postgresql"] = bench_pg(args.tables, args.sessions)
    if args.engine in ("both", "mariadb"):
        print("mariadb: building tables and sessions…", file=sys.stderr)
        out["mariadb"] = bench_mariadb(args.tables, args.sessions)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
