"""Per-cycle cost of naming the culprit (issue 23) at N sessions in open transactions.

Throwaway servers only: a PostgreSQL cluster (pgcluster.py) and a MariaDB with
performance_schema and the transaction consumer on (tests/live/mariadb_instance.py). N
sessions each open a transaction with tagged statements (a locking read, an update, reads on
other tables) and stay idle; then the extra reads are timed against the reads they sit beside:
PostgreSQL `pg.txn_detail` (one pg_locks/pg_class read; daemon memory on) vs `pg.sessions`;
MariaDB `my.txn_detail` (connect attrs + statement history + transaction events) vs
`my.trx`; plus the enrichment of every session finding (the checks' side).

    python contrib/bench/bench_culprit.py --sessions 300 --runs 7
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent), str(ROOT / "tests" / "live")]

import mariadb_instance  # noqa: E402
import psycopg  # noqa: E402
from pgcluster import PgCluster  # noqa: E402

from dbwatch.catalogue import Thresholds, load_catalogue  # noqa: E402
from dbwatch.checks import culprit  # noqa: E402
from dbwatch.config import Config, RuleOverride  # noqa: E402
from dbwatch.evaluate import Selection, evaluate  # noqa: E402
from dbwatch.probes import PROBES, ProbeCache, run_probes  # noqa: E402
from dbwatch.targets import open_target, spec_for  # noqa: E402

TABLES = 20
TAG = "/*application='Shop',controller='orders',action='create',framework='bench%3A1'*/"


def _timed(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 2), out


def _rows(data: Any) -> int:
    data = getattr(data, "data", data)  # Covered
    if isinstance(data, tuple):
        return len(data)
    return sum(len(getattr(data, f, ())) for f in ("locks", "attrs", "statements", "transactions"))


def _enrich_ms(url: str, rules: tuple[str, ...], runs: int) -> tuple[float, int]:
    catalogue = load_catalogue()
    low = Thresholds("duration", 1.0, 3600.0)
    config = Config(rules={r: RuleOverride(thresholds=low) for r in rules})
    conn = open_target(spec_for(url))
    try:
        snap = run_probes(conn, url, {"pg.sessions", "pg.txn_detail", "my.trx", "my.txn_detail",
                                      "my.lock_waits"})
    finally:
        conn.close()
    ev = evaluate(snap, catalogue, config, Selection(rules))
    named = sum(1 for f in ev.findings if f.evidence.get("origin", {}).get("phrase"))
    # the enrichment alone (run again over the findings: the same work, summaries aside)
    ms, _ = _timed(lambda: culprit.enrich(ev.findings, snap), runs)
    return ms, named


def bench_pg(n: int, runs: int) -> dict[str, Any]:
    with PgCluster({"max_connections": str(n + 20)}) as pg:
        url = pg.url
        with psycopg.connect(url, autocommit=True) as admin:
            for i in range(TABLES):
                admin.execute(f"CREATE TABLE t{i} (id int PRIMARY KEY, s text)")
                admin.execute(f"INSERT INTO t{i} SELECT g, 'x' FROM generate_series(1, {n}) g")
        conns = []
        for k in range(n):
            c = psycopg.connect(url)
            c.execute(f"SELECT * FROM t{k % TABLES} WHERE id = {k + 1} FOR UPDATE {TAG}")
            c.execute(f"UPDATE t{(k + 1) % TABLES} SET s = 'y' WHERE id = {k + 1} {TAG}")
            c.execute(f"SELECT count(*) FROM t{(k + 2) % TABLES} {TAG}")
            conns.append(c)
        time.sleep(1.5)  # every transaction past MIN_AGE
        conn = open_target(spec_for(url))
        cache = ProbeCache()
        try:
            base_ms, base = _timed(lambda: PROBES["pg.sessions"].fn(conn), runs)
            cold_ms, cold = _timed(lambda: PROBES["pg.txn_detail"].fn(conn, cache=None), runs)
            warm_ms, warm = _timed(lambda: PROBES["pg.txn_detail"].fn(conn, cache=cache), runs)
        finally:
            conn.close()
        enrich_ms, named = _enrich_ms(url, ("PG001", "PG002"), runs)
        for c in conns:
            c.close()
    return {"sessions": n, "pg.sessions_ms": base_ms, "pg.sessions_rows": _rows(base),
            "pg.txn_detail_ms": cold_ms, "pg.txn_detail_rows": _rows(cold),
            "pg.txn_detail_daemon_ms": warm_ms, "pg.txn_detail_daemon_rows": _rows(warm),
            "enrich_ms": enrich_ms, "findings_named": named}


def bench_my(n: int, runs: int) -> dict[str, Any]:
    opts = mariadb_instance.PFS_OPTIONS + [
        "--performance-schema-consumer-events-transactions-current=ON",
        "--performance-schema-instrument=transaction=ON", f"--max-connections={n + 20}"]
    with mariadb_instance.MariaDbInstance.create(opts) as db:
        for i in range(TABLES):
            db.query(f"CREATE TABLE t{i} (id int PRIMARY KEY, s text) ENGINE=InnoDB")
            db.query(f"INSERT INTO t{i} SELECT seq, 'x' FROM seq_1_to_{n}")
        conns = []
        for k in range(n):
            c = db.connect(autocommit=True, program_name=f"worker-{k}")
            cur = c.cursor()
            cur.execute("SELECT 1")
            cur.execute("BEGIN")
            cur.execute(f"SELECT * FROM t{k % TABLES} WHERE id = {k + 1} FOR UPDATE {TAG}")
            cur.execute(f"UPDATE t{(k + 1) % TABLES} SET s = 'y' WHERE id = {k + 1} {TAG}")
            cur.execute(f"SELECT count(*) FROM t{(k + 2) % TABLES} {TAG}")
            conns.append(c)
        time.sleep(2.2)
        conn = open_target(spec_for(db.url()))
        try:
            base_ms, base = _timed(lambda: PROBES["my.trx"].fn(conn), runs)
            det_ms, det = _timed(lambda: PROBES["my.txn_detail"].fn(conn), runs)
        finally:
            conn.close()
        enrich_ms, named = _enrich_ms(db.url(), ("MY001", "MY002"), runs)
        for c in conns:
            c.close()
    return {"sessions": n, "my.trx_ms": base_ms, "my.trx_rows": _rows(base),
            "my.txn_detail_ms": det_ms, "my.txn_detail_rows": _rows(det),
            "enrich_ms": enrich_ms, "findings_named": named}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--only", choices=["pg", "my"])
    args = ap.parse_args()
    out = {}
    if args.only in (None, "pg"):
        out["postgresql"] = bench_pg(args.sessions, args.runs)
    if args.only in (None, "my"):
        out["mariadb"] = bench_my(args.sessions, args.runs)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
