"""Startup cost of one-shot commands (cron, Nagios): `dbwatch --version`, `--help` and an audit
of one empty PostgreSQL database (and of one empty MariaDB schema), each run `--runs` times as
a fresh process; the median wall time and the children's CPU (resource.RUSAGE_CHILDREN, median
and min: the min is the least disturbed by other load), beside a bare `python -c pass` (the
interpreter's own start on this machine), what `-X importtime` sums for each and how many
modules each imports (a count: robust to load).

Bytecode is written to a cache of the bench's own (PYTHONPYCACHEPREFIX) and warmed by one run
first, as an installed package has its .pyc: with PYTHONDONTWRITEBYTECODE set, every run would
compile dbwatch from source and measure the compiler.

    python contrib/bench/bench_startup.py            # 10 runs each
    python contrib/bench/bench_startup.py --smoke    # CI: 2 runs each
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

# DBWATCH_BENCH_ROOT: another checkout to measure (the "before" of a change)
ROOT = Path(os.environ.get("DBWATCH_BENCH_ROOT") or Path(__file__).resolve().parents[2])
DB = f"dbw_startup_{os.getpid()}"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="dbw-startup-pyc-")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(argv: list[str], runs: int) -> dict[str, float]:
    subprocess.run(argv, cwd=ROOT, env=ENV, capture_output=True, timeout=120, check=False)  # bytecode
    walls, cpus = [], []
    for _ in range(runs):
        c0, w0 = children_cpu(), time.perf_counter()
        subprocess.run(argv, cwd=ROOT, env=ENV, capture_output=True, timeout=120, check=False)
        walls.append(time.perf_counter() - w0)
        cpus.append(children_cpu() - c0)
    return {
        "wall_s": round(statistics.median(walls), 3),
        "cpu_s": round(statistics.median(cpus), 3),
        "cpu_min_s": round(min(cpus), 3),
    }


def import_ms(args: list[str]) -> float:
    """Sum of the top-level imports' cumulative times (-X importtime), in ms."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "dbwatch", *args], cwd=ROOT,
                         env=ENV, capture_output=True, text=True, timeout=120, check=False)
    total = 0
    for line in out.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].startswith(" ") and not parts[2].startswith("  "):
            try:
                total += int(parts[1])
            except ValueError:
                continue
    return round(total / 1000, 1)


def modules(args: list[str]) -> int:
    """How many modules the command imports (every line of -X importtime is one)."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "dbwatch", *args], cwd=ROOT,
                         env=ENV, capture_output=True, text=True, timeout=120, check=False)
    return sum(1 for ln in out.stderr.splitlines() if ln.startswith("import time:")
               and "cumulative" not in ln)


def my_schema(url: str, create: bool) -> bool:
    """Create (or drop) the empty MariaDB schema; False when there is no server to use."""
    try:
        import pymysql

        u = urlsplit(url)
        with pymysql.connect(host=u.hostname, port=u.port or 3306, user=u.username or "root",
                             password=u.password or "", connect_timeout=3) as c:
            c.cursor().execute(f"CREATE DATABASE `{DB}`" if create  # our own name
                               else f"DROP DATABASE IF EXISTS `{DB}`")
        return True
    except Exception as exc:  # noqa: BLE001 - a bench without MariaDB still measures PG
        print(f"no MariaDB audit: {exc}", file=sys.stderr)
        return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432")
    ap.add_argument("--mysql", default="mysql://root@127.0.0.1:3306", help="'' to leave out")
    ap.add_argument("--smoke", action="store_true", help="2 runs each (CI)")
    ap.add_argument("--json", help="write the result here too")
    args = ap.parse_args()
    runs = 2 if args.smoke else args.runs
    import psycopg

    with psycopg.connect(args.pg + "/postgres", autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{DB}"')  # our own name
    mysql = bool(args.mysql) and my_schema(args.mysql, create=True)
    try:
        audit = ["audit", f"{args.pg}/{DB}"]
        py = [sys.executable, "-m", "dbwatch"]
        load0 = os.getloadavg()[0]
        res: dict[str, object] = {
            "runs": runs,
            "python_bare": timed([sys.executable, "-c", "pass"], runs),
            "version": timed([*py, "--version"], runs),
            "help": timed([*py, "--help"], runs),
            "audit_empty_pg": timed([*py, *audit], runs),
            "import_ms": {"version": import_ms(["--version"]), "audit_empty_pg": import_ms(audit)},
            "modules": {"version": modules(["--version"]), "audit_empty_pg": modules(audit)},
        }
        if mysql:
            my_audit = ["audit", f"{args.mysql}/{DB}"]
            res["audit_empty_mysql"] = timed([*py, *my_audit], runs)
            res["modules"]["audit_empty_mysql"] = modules(my_audit)  # type: ignore[index]
        res["loadavg_1m"] = [round(load0, 2), round(os.getloadavg()[0], 2)]  # before, after
    finally:
        if mysql:
            my_schema(args.mysql, create=False)
        with psycopg.connect(args.pg + "/postgres", autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
    print(json.dumps(res, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
