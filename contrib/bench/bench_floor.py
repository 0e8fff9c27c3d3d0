"""The floor of a daemon cycle: what one idle target's steady cycle sends, and what those
round trips cost alone on a bare driver session.

One target (an empty database of its own) is run through the daemon's real cycle
(`Daemon.cycle`: kept session, shared server-wide probes, state DB) `--cycles` times after a
warm-up. Every statement the cycle sends is recorded client-side (text, parameters, rows
returned); the statements of the last steady cycle are then replayed `--cycles` times on a
bare psycopg / PyMySQL session: that is the floor. Reported per cycle: statements, rows,
dbwatch process CPU, server CPU (from /proc of the server's processes, throwaway cluster
only), and the bare loop's wall and CPU time. With --throwaway (PostgreSQL) the statement and
row counts are also read from pg_stat_statements of a cluster nobody else uses.

    python contrib/bench/bench_floor.py --throwaway            # PostgreSQL, own cluster
    python contrib/bench/bench_floor.py --engine mysql         # the shared MariaDB
    python contrib/bench/bench_floor.py --smoke                # CI: a few cycles
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# DBWATCH_BENCH_ROOT: another checkout to measure (the "before" of a change)
sys.path.insert(0, os.environ.get("DBWATCH_BENCH_ROOT") or str(Path(__file__).resolve().parents[2]))

from dbwatch.catalogue import load_catalogue  # noqa: E402
from dbwatch.config import Config, DaemonConfig, TargetConfig  # noqa: E402
from dbwatch.daemon.loop import Daemon, Setup  # noqa: E402
from dbwatch.daemon.state import State  # noqa: E402
from dbwatch.targets import spec_for  # noqa: E402
from dbwatch.targets.mysql import MyConnection  # noqa: E402
from dbwatch.targets.postgres import PgConnection  # noqa: E402

DB = f"dbw_floor_{os.getpid()}"
RECORD: list[tuple[str, Any, int]] = []


def _recording(cls: Any) -> None:
    """Count every statement a cycle sends (client side: the same for both engines)."""
    orig = cls.rows

    def rows(self: Any, sql: str, params: Any = None, limit: int | None = None) -> Any:
        out = orig(self, sql, params, limit)
        RECORD.append((sql, params, len(out)))
        return out

    cls.rows = rows
    fixed = getattr(cls, "fixed_rows", None)  # PostgreSQL: the daemon's idle statement
    if fixed is not None:

        def fixed_rows(self: Any, sql: str) -> Any:
            names, got = fixed(self, sql)
            RECORD.append((sql, None, len(got)))
            return names, got

        cls.fixed_rows = fixed_rows


PHASES: dict[str, float] = {}


def _phases() -> None:
    """--phases: thread CPU of the probes, the rules and the bookkeeping after them (the same
    split as bench_daemon's; a few clock reads per cycle on top of the cycle's own CPU)."""
    from dbwatch import pipeline

    def wrap(owner: Any, name: str, label: str) -> None:
        fn = getattr(owner, name)

        def timed(*a: Any, **kw: Any) -> Any:
            t0 = time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                PHASES[label] = PHASES.get(label, 0.0) + time.thread_time() - t0

        setattr(owner, name, timed)

    wrap(pipeline, "run_probes", "probes")
    wrap(pipeline, "evaluate", "evaluate")
    wrap(Daemon, "_after_probe", "state+alerts+metrics")


# --gap: seconds between cycles (a daemon's cycles are spaced; back to back they run with the
# previous cycle's CPU caches warm — RESULTS-fleet.md §2c: 1.2 ms back to back, 2.2 ms at 30 ms)
GAP = 0.0


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def proc_cpu(pids: list[int]) -> float:
    """utime + stime (seconds) of these processes, from /proc/<pid>/stat."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / tick


def children(ppid: int) -> list[int]:
    out = [ppid]
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == ppid:
                    out.append(int(d.name))
            except (OSError, ValueError, IndexError):
                continue
    return out


def run(engine: str, url: str, cycles: int, postmaster: int | None, stmts: bool) -> dict[str, Any]:
    tc = TargetConfig(name="t", url=url, interval=15.0)
    config = Config(targets=(tc,), daemon=DaemonConfig(max_connections_per_server=10))
    setup = Setup(load_catalogue(), config, {"t": (spec_for(url, "t"), tc)}, ())
    _recording(PgConnection)
    _recording(MyConnection)
    with tempfile.TemporaryDirectory() as tmp:
        state = State(Path(tmp) / "state.db")
        d = Daemon(None, state, setup)
        for _ in range(3):  # warm-up: first connection, ttl caches filled
            d.cycle("t", time.time())
        RECORD.clear()
        PHASES.clear()
        if stmts:
            _pss_reset(url)
        srv0 = proc_cpu(children(postmaster)) if postmaster else None
        c0, w0 = cpu(), time.perf_counter()
        for _ in range(cycles):
            n0 = len(RECORD)
            d.cycle("t", time.time())
            last = RECORD[n0:]
            if GAP:
                time.sleep(GAP)
        c1, w1 = cpu(), time.perf_counter() - GAP * cycles
        srv1 = proc_cpu(children(postmaster)) if postmaster else None
        sent = len(RECORD) / cycles
        rows = sum(r[2] for r in RECORD) / cycles
        pss = _pss(url) if stmts else None
        if d.pool is not None:
            d.pool.discard()
        state.close()
    floor = replay(engine, url, last, cycles)
    return {
        "engine": engine,
        "cycles": cycles,
        "statements_per_cycle": round(sent, 2),
        "rows_per_cycle": round(rows, 2),
        "statements": [
            {"sql": " ".join(s.split())[:120], "rows": n} for s, _, n in last
        ],
        "dbwatch_cpu_ms_per_cycle": round(1000 * (c1 - c0) / cycles, 3),
        "dbwatch_wall_ms_per_cycle": round(1000 * (w1 - w0) / cycles, 3),
        "server_cpu_ms_per_cycle": (
            round(1000 * (srv1 - srv0) / cycles, 3) if srv0 is not None and srv1 is not None else None
        ),
        "cpu_ms_per_cycle_by_phase": {k: round(1000 * v / cycles, 3) for k, v in sorted(PHASES.items())},
        "pg_stat_statements": pss,
        "floor_wall_ms_per_cycle": floor[0],
        "floor_cpu_ms_per_cycle": floor[1],
        "loadavg": os.getloadavg()[0],
        "gap_s": GAP,
    }


def replay(engine: str, url: str, stmts: list[tuple[str, Any, int]], cycles: int) -> tuple[float, float]:
    """The same statements on a bare driver session, `cycles` times: (wall ms, CPU ms) each."""
    if engine == "postgresql":
        import psycopg

        conn: Any = psycopg.connect(url, autocommit=True)
        cur = conn.cursor()
    else:
        import pymysql

        from dbwatch.targets import url_parts

        base, _ = url_parts(url)
        conn = pymysql.connect(host=str(base["host"]), port=int(str(base["port"] or 3306)),
                               user=str(base["user"]), password=str(base["password"] or ""),
                               database=str(base["database"]), autocommit=True)
        cur = conn.cursor()
    try:
        c0, w0 = cpu(), time.perf_counter()
        for _ in range(cycles):
            for s, p, _n in stmts:
                cur.execute(s, p)
                if cur.description is not None:
                    cur.fetchall()
        c1, w1 = cpu(), time.perf_counter()
    finally:
        conn.close()
    return round(1000 * (w1 - w0) / cycles, 3), round(1000 * (c1 - c0) / cycles, 3)


def _admin(url: str) -> str:
    return url.rsplit("/", 1)[0] + "/postgres"


def _pss_reset(url: str) -> None:
    import psycopg

    with psycopg.connect(_admin(url), autocommit=True) as c:
        c.execute("SELECT pg_stat_statements_reset()")


def _pss(url: str) -> dict[str, Any]:
    """Statements and rows the server counted for the target's database (the bench's own
    reset and read excluded)."""
    import psycopg

    with psycopg.connect(_admin(url), autocommit=True) as c:
        row = c.execute(
            "SELECT coalesce(sum(calls), 0), coalesce(sum(rows), 0) FROM pg_stat_statements s "
            "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s",
            (DB,),
        ).fetchone()
    return {"calls": int(row[0]), "rows": int(row[1])} if row else {}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", choices=("postgresql", "mysql"), default="postgresql")
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--mysql", default="mysql://root@127.0.0.1:3306")
    ap.add_argument("--cycles", type=int, default=300)
    ap.add_argument("--throwaway", action="store_true", help="PostgreSQL: a cluster of its own")
    ap.add_argument("--smoke", action="store_true", help="a few cycles (CI)")
    ap.add_argument("--phases", action="store_true",
                    help="also the thread CPU per phase (probes, rules, bookkeeping)")
    ap.add_argument("--json", help="write the result here too")
    ap.add_argument("--gap", type=float, default=0.0,
                    help="seconds of sleep between cycles (not counted in wall per cycle)")
    args = ap.parse_args()
    global GAP
    GAP = args.gap
    logging.basicConfig(level=logging.WARNING)
    if args.smoke:
        args.cycles = 5
    if args.phases:
        _phases()
    if args.engine == "mysql":
        res = _mysql(args)
    elif args.throwaway:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from pgcluster import PgCluster

        settings = {"shared_preload_libraries": "'pg_stat_statements'", "fsync": "off",
                    "pg_stat_statements.track": "all", "autovacuum": "off"}
        with PgCluster(settings) as cluster:
            import psycopg

            with psycopg.connect(cluster.url, autocommit=True) as c:
                c.execute("CREATE EXTENSION pg_stat_statements")
            pid = int(Path(cluster.data, "postmaster.pid").read_text().split()[0])
            res = _pg(cluster.url, args.cycles, pid, True)
    else:
        res = _pg(args.pg, args.cycles, None, False)
    print(json.dumps(res, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0


def _pg(base: str, cycles: int, postmaster: int | None, stmts: bool) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(base, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{DB}"')  # our own name, not user input
    try:
        return run("postgresql", base.rsplit("/", 1)[0] + f"/{DB}", cycles, postmaster, stmts)
    finally:
        with psycopg.connect(base, autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')


def _mysql(args: argparse.Namespace) -> dict[str, Any]:
    import pymysql

    c = pymysql.connect(host="127.0.0.1", user="root", autocommit=True)
    try:
        c.cursor().execute(f"CREATE DATABASE `{DB}`")
        return run("mysql", args.mysql.rstrip("/") + f"/{DB}", args.cycles, None, False)
    finally:
        c.cursor().execute(f"DROP DATABASE IF EXISTS `{DB}`")
        c.close()


if __name__ == "__main__":
    sys.exit(main())
