"""What a target's first look costs against its second cycle: each statement's server CPU (the
session's backend, from /proc/PID/schedstat: nanoseconds, not the 10 ms ticks of /proc/PID/stat),
wall time and the dbwatch thread's CPU, over N fresh databases. The server must run on this
machine (it reads the backends' /proc entries).

    python contrib/bench/bench_first_look.py [--targets 30] [--pg URL] [--json F] [--smoke]

Instrumentation only: PgConnection.rows and .open are wrapped to read the backend's CPU
around each call; nothing is mocked, every statement goes to the real server.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(os.environ.get("DBWATCH_BENCH_ROOT", Path(__file__).resolve().parents[2]))))

from dbwatch.catalogue import load_catalogue  # noqa: E402
from dbwatch.config import Config, DaemonConfig, TargetConfig  # noqa: E402
from dbwatch.daemon.loop import Daemon, Setup  # noqa: E402
from dbwatch.daemon.state import State  # noqa: E402
from dbwatch.targets import postgres as pgt  # noqa: E402
from dbwatch.targets import spec_for  # noqa: E402

PREFIX = f"dbw_first_{os.getpid()}_"


def backend_ms(pid: int) -> float:
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e6
    except (OSError, ValueError, IndexError):
        return 0.0


class Meter:
    """Per statement (its first comment line): calls, server CPU ms, wall ms, client CPU ms."""

    def __init__(self) -> None:
        self.stats: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
        rows, opener = pgt.PgConnection.rows, pgt.PgConnection.open.__func__  # type: ignore[attr-defined]
        meter = self

        def timed_rows(conn: Any, sql: str, params: Any = None, limit: int | None = None,
                       _fixed: bool = False) -> Any:
            c0, w0, t0 = backend_ms(conn.backend_pid), time.perf_counter(), time.thread_time()
            try:
                return run(conn, sql, params, limit, _fixed)
            finally:
                key = sql.strip().split("\n", 1)[0][:100]
                s = meter.stats[key]
                s[0] += 1
                s[1] += backend_ms(conn.backend_pid) - c0
                s[2] += (time.perf_counter() - w0) * 1000
                s[3] += (time.thread_time() - t0) * 1000

        def timed_open(cls: Any, spec: Any, database: str | None = None) -> Any:
            w0, t0 = time.perf_counter(), time.thread_time()
            conn = opener(cls, spec, database)
            s = meter.stats["<session open>"]
            s[0] += 1
            s[1] += backend_ms(conn.backend_pid)
            s[2] += (time.perf_counter() - w0) * 1000
            s[3] += (time.thread_time() - t0) * 1000
            return conn

        pgt.PgConnection.rows = timed_rows  # type: ignore[method-assign]
        fixed = pgt.PgConnection.fixed_rows  # the daemon's joined dead-tuple statement

        def timed_fixed(conn: Any, sql: str) -> Any:
            return timed_rows(conn, sql, _fixed=True)

        def run(conn: Any, sql: str, params: Any = None, limit: int | None = None,
                _fixed: bool = False) -> Any:
            return fixed(conn, sql) if _fixed else rows(conn, sql, params, limit)

        pgt.PgConnection.fixed_rows = timed_fixed  # type: ignore[method-assign]
        pgt.PgConnection.open = classmethod(timed_open)  # type: ignore[method-assign, assignment]

    def take(self, n: int) -> list[dict[str, Any]]:
        out = [{"statement": k, "calls": int(v[0]), "server_cpu_ms_per_target": round(v[1] / n, 3),
                "wall_ms_per_target": round(v[2] / n, 3), "client_cpu_ms_per_target": round(v[3] / n, 3)}
               for k, v in sorted(self.stats.items(), key=lambda kv: -kv[1][1])]
        self.stats.clear()
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--targets", type=int, default=30)
    ap.add_argument("--json", help="write the result here too")
    ap.add_argument("--smoke", action="store_true", help="CI: 3 targets")
    args = ap.parse_args()
    n = 3 if args.smoke else args.targets
    logging.disable(logging.WARNING)  # the firing lines of n targets
    base = args.pg.rsplit("/", 1)[0]
    names = [f"{PREFIX}{i}" for i in range(n)]
    with psycopg.connect(args.pg, autocommit=True) as admin:
        for name in names:
            admin.execute(f'CREATE DATABASE "{name}"')
    meter = Meter()
    result: dict[str, Any] = {"targets": n, "loadavg_1m": round(os.getloadavg()[0], 2)}
    try:
        targets = tuple(TargetConfig(name=f"t{i}", url=f"{base}/{db}", interval=15)
                        for i, db in enumerate(names))
        config = Config(targets=targets, daemon=DaemonConfig(max_connections_per_server=n + 10))
        setup = Setup(load_catalogue(), config,
                      {t.name: (spec_for(t.url, t.name), t) for t in targets}, ())
        with tempfile.TemporaryDirectory() as tmp:
            d = Daemon(None, State(Path(tmp) / "state.db"), setup)
            d.cycle("t0", time.time())  # imports and first-use work, not counted
            meter.take(1)
            for label in ("first_look", "second_cycle"):
                if label == "second_cycle":
                    time.sleep(d.shared.ttl + 0.5)  # the server-wide reads are read again
                todo = targets[1:]
                t0, w0 = time.thread_time(), time.perf_counter()
                for t in todo:
                    d.cycle(t.name, time.time())
                cpu, wall = time.thread_time() - t0, time.perf_counter() - w0
                stmts = meter.take(max(len(todo), 1))
                result[label] = {
                    "dbwatch_cpu_ms_per_target": round(1000 * cpu / max(len(todo), 1), 2),
                    "wall_ms_per_target": round(1000 * wall / max(len(todo), 1), 2),
                    "server_cpu_ms_per_target": round(
                        sum(s["server_cpu_ms_per_target"] for s in stmts), 2),
                    "statements": stmts,
                }
            if d.pool is not None:
                d.pool.discard()
    finally:
        with psycopg.connect(args.pg, autocommit=True) as admin:
            for name in names:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print(json.dumps(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    for label in ("first_look", "second_cycle"):
        r = result[label]
        print(f"\n{label}: dbwatch {r['dbwatch_cpu_ms_per_target']} ms CPU, server "
              f"{r['server_cpu_ms_per_target']} ms CPU, wall {r['wall_ms_per_target']} ms per target",
              file=sys.stderr)
        for s in r["statements"]:
            print(f"  {s['server_cpu_ms_per_target']:7.2f} ms server  {s['wall_ms_per_target']:7.2f} ms wall"
                  f"  x{s['calls']:<4d} {s['statement'][:90]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
