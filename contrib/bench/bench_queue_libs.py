"""Benchmark: server time of every queue query per library at 1,000,000 finished rows plus
10,000 pending, cold (right after the load, no ANALYZE: autovacuum is off here) and after
ANALYZE, on the local PostgreSQL / MariaDB. Each library's schema is created by the library's
own tool where it is installed (tests/.queue-libs: pg-boss, graphile-worker, procrastinate,
pgqueuer; Symfony Messenger's auto_setup through php), then filled with INSERT ... SELECT.
Prints JSON and a Markdown table: per library, query, the server milliseconds (EXPLAIN ANALYZE
/ ANALYZE FORMAT=JSON) and the whole `dbwatch audit --select QU` wall time.

    python contrib/bench/bench_queue_libs.py                   # every library available
    python contrib/bench/bench_queue_libs.py --libs pg-boss12 --rows 200000
    python contrib/bench/bench_queue_libs.py --smoke    # CI: Laravel on both engines, 2,000 rows
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pymysql

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dbwatch.probes import sql  # noqa: E402
from dbwatch.probes.queue import (  # noqa: E402
    ASPECTS,
    FAILED_WINDOW,
    GROUPS,
    HORIZON,
    ID_RANGE_KINDS,
    WINDOW,
    _bounds,
    _has_sql,
    _render,
    discover,
)
from dbwatch.targets import open_target, spec_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
APPS = ROOT / "tests" / "live" / "queue_apps"
LIBS = Path(os.environ.get("DBWATCH_QUEUE_LIBS", ROOT / "tests" / ".queue-libs"))
NODE = LIBS / "node" / "node_modules"
PG = "host=127.0.0.1 port=5432 user=postgres dbname={db}"


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(LIBS / "py"), str(ROOT)])
    env["NODE_PATH"] = str(NODE)
    env.update(extra)
    return env


def _run(args: list[str], **env: str) -> None:
    subprocess.run(args, cwd=APPS, env=_env(**env), check=True, timeout=600, capture_output=True)


# Per library: how its schema is made (by its own tool) and how 1 M finished + 10 k pending
# rows are put in ({n} finished, {p} pending).
def _pgboss(major: str, db: str) -> list[str]:
    package, entry = ("pg-boss12", "dist/index.js") if major == "12" else ("pg-boss", "src/index.js")
    _run(["node", "pgboss.mjs", "setup"], PGBOSS_ENTRY=str(NODE / package / entry),
         PG_URL=f"postgresql://postgres@127.0.0.1:5432/{db}")
    return [
        "INSERT INTO pgboss.job (name, state, started_on, completed_on) SELECT 'ok', 'completed',"
        " now() - interval '1 hour', now() - interval '1 hour' FROM generate_series(1, {n})",
        "INSERT INTO pgboss.job (name) SELECT 'later' FROM generate_series(1, {p})",
    ]


def _graphile(db: str) -> list[str]:
    _run(["node", "graphile.js", "setup"], PG_URL=f"postgresql://postgres@127.0.0.1:5432/{db}")
    return [
        "INSERT INTO graphile_worker._private_tasks (identifier) VALUES ('boom'), ('ok')",
        "INSERT INTO graphile_worker._private_jobs (task_id, payload, attempts, max_attempts,"
        " last_error, run_at) SELECT 1, '{{}}', 2, 2, 'Error: boom', now() + interval '1 day'"
        " FROM generate_series(1, {n})",
        "INSERT INTO graphile_worker._private_jobs (task_id, payload) SELECT 2, '{{}}'"
        " FROM generate_series(1, {p})",
    ]


def _procrastinate(db: str) -> list[str]:
    _run([sys.executable, "-m", "procrastinate", "--app=procrastinate_app.app", "schema",
          "--apply"], DSN=PG.format(db=db))
    return [
        "INSERT INTO procrastinate_jobs (queue_name, task_name, status, attempts) SELECT 'default',"
        " 'ok', 'succeeded', 0 FROM generate_series(1, {n})",
        "INSERT INTO procrastinate_jobs (queue_name, task_name, status) SELECT 'default', 'ok',"
        " 'todo' FROM generate_series(1, {p})",
        "INSERT INTO procrastinate_events (job_id, type, at) SELECT id, 'deferred', now()"
        " FROM procrastinate_jobs WHERE status = 'todo'",
    ]


def _pgqueuer(db: str) -> list[str]:
    _run([sys.executable, "-m", "pgqueuer", "install"], PGHOST="127.0.0.1", PGUSER="postgres",
         PGDATABASE=db)
    return [
        "INSERT INTO pgqueuer_log (job_id, status, priority, entrypoint) SELECT s, 'successful',"
        " 0, 'ok' FROM generate_series(1, {n}) s",
        "INSERT INTO pgqueuer (priority, status, entrypoint) SELECT 0, 'queued', 'ok'"
        " FROM generate_series(1, {p})",
    ]


def _symfony(engine: str, db: str) -> list[str]:
    params = ({"driver": "pdo_pgsql", "host": "127.0.0.1", "user": "postgres", "dbname": db}
              if engine == "postgresql" else
              {"driver": "pdo_mysql", "host": "127.0.0.1", "user": "root", "dbname": db})
    _run(["php", "messenger.php", json.dumps(params), "send", "Hello", "1"])
    seq = "generate_series(1, {n})" if engine == "postgresql" else "seq_1_to_{n}"
    pseq = seq.replace("{n}", "{p}")
    body = "'O:36:\"Symfony\\\\Component\\\\Messenger\\\\Envelope\":2:{{}}'"
    now = "localtimestamp" if engine == "postgresql" else "NOW()"
    return [
        f"INSERT INTO messenger_messages (body, headers, queue_name, created_at, available_at)"
        f" SELECT {body}, '[]', 'failed', {now}, {now} FROM {seq}",
        f"INSERT INTO messenger_messages (body, headers, queue_name, created_at, available_at)"
        f" SELECT {body}, '[]', 'default', {now}, {now} FROM {pseq}",
    ]


def _laravel(engine: str, db: str) -> list[str]:
    if engine == "postgresql":
        return [
            "CREATE TABLE jobs (id bigserial PRIMARY KEY, queue varchar(255) NOT NULL, payload"
            " text NOT NULL, attempts smallint NOT NULL, reserved_at integer, available_at"
            " integer NOT NULL, created_at integer NOT NULL)",
            "CREATE INDEX jobs_queue_index ON jobs (queue)",
            "CREATE TABLE failed_jobs (id bigserial PRIMARY KEY, uuid varchar(255) NOT NULL"
            " UNIQUE, connection text NOT NULL, queue text NOT NULL, payload text NOT NULL,"
            " exception text NOT NULL, failed_at timestamp(0) NOT NULL DEFAULT CURRENT_TIMESTAMP)",
            "INSERT INTO failed_jobs (uuid, connection, queue, payload, exception) SELECT"
            " gen_random_uuid()::text, 'database', 'default', '{{}}', 'Illuminate\\Queue\\"
            "MaxAttemptsExceededException: App\\Jobs\\A has been attempted too many times.'"
            " FROM generate_series(1, {n})",
            "INSERT INTO jobs (queue, payload, attempts, available_at, created_at) SELECT"
            " 'default', '{{}}', 0, extract(epoch FROM now())::int, 0 FROM generate_series(1, {p})",
        ]
    return [
        "CREATE TABLE jobs (id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY, queue"
        " varchar(255) NOT NULL, payload longtext NOT NULL, attempts tinyint unsigned NOT NULL,"
        " reserved_at int unsigned NULL, available_at int unsigned NOT NULL, created_at int"
        " unsigned NOT NULL, KEY jobs_queue_index (queue))",
        "CREATE TABLE failed_jobs (id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY, uuid"
        " varchar(255) NOT NULL, connection text NOT NULL, queue text NOT NULL, payload longtext"
        " NOT NULL, exception longtext NOT NULL, failed_at timestamp NOT NULL DEFAULT"
        " CURRENT_TIMESTAMP, UNIQUE KEY failed_jobs_uuid_unique (uuid))",
        "INSERT INTO failed_jobs (uuid, connection, queue, payload, exception) SELECT UUID(),"
        " 'database', 'default', '{{}}', 'Illuminate\\\\Queue\\\\MaxAttemptsExceededException: x'"
        " FROM seq_1_to_{n}",
        "INSERT INTO jobs (queue, payload, attempts, available_at, created_at) SELECT 'default',"
        " '{{}}', 0, UNIX_TIMESTAMP(), 0 FROM seq_1_to_{p}",
    ]


LIBRARIES: dict[str, tuple[str, Any]] = {
    "laravel-pg": ("postgresql", lambda db: _laravel("postgresql", db)),
    "laravel-mariadb": ("mysql", lambda db: _laravel("mysql", db)),
    "pg-boss12": ("postgresql", lambda db: _pgboss("12", db)),
    "pg-boss10": ("postgresql", lambda db: _pgboss("10", db)),
    "graphile-worker": ("postgresql", _graphile),
    "procrastinate": ("postgresql", _procrastinate),
    "pgqueuer": ("postgresql", _pgqueuer),
    "symfony-pg": ("postgresql", lambda db: _symfony("postgresql", db)),
    "symfony-mariadb": ("mysql", lambda db: _symfony("mysql", db)),
}


def _server_ms(engine: str, conn: Any, text: str, params: dict[str, Any]) -> float:
    with conn.cursor() as cur:
        if engine == "mysql":
            cur.execute("ANALYZE FORMAT=JSON " + text, params)
            row = cur.fetchone()
            plan = json.loads(row[0] if isinstance(row, tuple) else next(iter(row.values())))
            return float(plan["query_block"].get("r_total_time_ms", 0.0))
        cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + text, params)
        row = cur.fetchone()
        plan = row[0] if isinstance(row, tuple) else next(iter(row.values()))
        plan = plan if isinstance(plan, list) else json.loads(plan)
        return float(plan[0]["Execution Time"])


def _queries(engine: str, target: Any, repeat: int) -> dict[str, float]:
    """Server ms of every queue query of every discovered table (a Discovered, by attribute)."""
    out: dict[str, float] = {}
    for t in discover(target, engine):
        params: dict[str, Any] = {"window": WINDOW, "groups": GROUPS, "horizon": HORIZON}
        if engine == "mysql" and t.kind in ID_RANGE_KINDS:
            params |= _bounds(target, t)
            params.pop("beyond_window")
        for aspect in ASPECTS:
            name = f"queue_{t.kind}_{aspect}"
            if not _has_sql(engine, name):
                continue
            text = _render(sql(engine, name, target.version), engine, t)
            params["window"] = FAILED_WINDOW if aspect == "failed" else WINDOW
            try:
                runs = [_server_ms(engine, target.conn, text, params) for _ in range(repeat)]
            except (pymysql.MySQLError, psycopg.Error) as exc:
                print(f"{t.table}.{aspect}: {exc}", file=sys.stderr)
                out[f"{t.table}.{aspect}"] = float("nan")
                continue
            out[f"{t.table}.{aspect}"] = round(statistics.median(runs), 1)
    return out


def _audit_seconds(url: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dbwatch", "audit", url, "--select", "QU",
                    "--format", "json"], env=_env(), capture_output=True, timeout=120)
    return round(time.perf_counter() - t0, 2)


def bench(lib: str, rows: int, pending: int, repeat: int) -> dict[str, Any]:
    engine, setup = LIBRARIES[lib]
    db = f"dbwq_bench_{lib.replace('-', '_')}_{os.getpid()}"
    if engine == "mysql":
        admin: Any = pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)
        admin.cursor().execute(f"CREATE DATABASE {db}")
        admin.select_db(db)
        url = f"mysql://root@127.0.0.1:3306/{db}"
        run = admin.cursor().execute
    else:
        admin = psycopg.connect(PG.format(db="test"), autocommit=True)
        admin.execute(f"CREATE DATABASE {db}")
        conn = psycopg.connect(PG.format(db=db), autocommit=True)
        url = f"postgresql://postgres@127.0.0.1:5432/{db}"
        run = conn.execute
    try:
        t0 = time.perf_counter()
        for stmt in setup(db):
            run(stmt.format(n=rows, p=pending))
        built = round(time.perf_counter() - t0, 1)
        target = open_target(spec_for(url))
        try:
            cold = _queries(engine, target, 1)
            cold_audit = _audit_seconds(url)
            run("ANALYZE TABLE " + ", ".join(f"`{t.table}`" for t in discover(target, engine))
                if engine == "mysql" else "ANALYZE")
            warm = _queries(engine, target, repeat)
            warm_audit = _audit_seconds(url)
        finally:
            target.close()
        return {"library": lib, "engine": engine, "finished_rows": rows, "pending_rows": pending,
                "build_seconds": built, "cold_ms": cold, "analyzed_ms": warm,
                "audit_seconds_cold": cold_audit, "audit_seconds": warm_audit}
    finally:
        if engine == "mysql":
            admin.cursor().execute(f"DROP DATABASE {db}")
        else:
            conn.close()
            admin.execute(f"DROP DATABASE {db} WITH (FORCE)")
        admin.close()


def markdown(results: list[dict[str, Any]]) -> str:
    lines = ["| library | engine | query | cold ms | analyzed ms |", "|---|---|---|---|---|"]
    for r in results:
        for q in r["cold_ms"]:
            lines.append(f"| {r['library']} | {r['engine']} | {q} | {r['cold_ms'][q]} | "
                         f"{r['analyzed_ms'].get(q)} |")
        lines.append(f"| {r['library']} | {r['engine']} | **audit --select QU (s)** | "
                     f"{r['audit_seconds_cold']} | {r['audit_seconds']} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--pending", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--libs", default=",".join(LIBRARIES))
    ap.add_argument("--smoke", action="store_true",
                    help="CI: Laravel on PostgreSQL and MariaDB at 2,000 rows, one run each")
    ap.add_argument("--json", help="write the results here too")
    args = ap.parse_args()
    if args.smoke:
        args.rows, args.pending, args.repeat = 2_000, 100, 1
        args.libs = "laravel-pg,laravel-mariadb"
    results = []
    for lib in [x.strip() for x in args.libs.split(",") if x.strip()]:
        try:
            results.append(bench(lib, args.rows, args.pending, args.repeat))
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)  # survives a later crash
        except (subprocess.CalledProcessError, FileNotFoundError) as exc:
            print(f"{lib}: skipped ({exc})", file=sys.stderr)
    doc = {"load_average": os.getloadavg(), "results": results}
    print(json.dumps(doc, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2))
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
