"""Startup cost of one-shot commands (cron, Nagios): `dbwatch --version`, `--help` and an audit
of one empty PostgreSQL database, each run `--runs` times as a fresh process; the median
wall time and the children's CPU (resource.RUSAGE_CHILDREN), beside a bare `python -c pass`
(the interpreter's own start on this machine), and what `-X importtime` sums for each.

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
import time
from pathlib import Path

# DBWATCH_BENCH_ROOT: another checkout to measure (the "before" of a change)
ROOT = Path(os.environ.get("DBWATCH_BENCH_ROOT") or Path(__file__).resolve().parents[2])
DB = f"dbw_startup_{os.getpid()}"


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(argv: list[str], runs: int) -> dict[str, float]:
    walls, cpus = [], []
    for _ in range(runs):
        c0, w0 = children_cpu(), time.perf_counter()
        subprocess.run(argv, cwd=ROOT, capture_output=True, timeout=120)
        walls.append(time.perf_counter() - w0)
        cpus.append(children_cpu() - c0)
    return {"wall_s": round(statistics.median(walls), 3), "cpu_s": round(statistics.median(cpus), 3)}


def import_ms(args: list[str]) -> float:
    """Sum of the top-level imports' cumulative times (-X importtime), in ms."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "dbwatch", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    total = 0
    for line in out.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].startswith(" ") and not parts[2].startswith("  "):
            try:
                total += int(parts[1])
            except ValueError:
                continue
    return round(total / 1000, 1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432")
    ap.add_argument("--smoke", action="store_true", help="2 runs each (CI)")
    ap.add_argument("--json", help="write the result here too")
    args = ap.parse_args()
    runs = 2 if args.smoke else args.runs
    import psycopg

    with psycopg.connect(args.pg + "/postgres", autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{DB}"')  # our own name
    try:
        audit = ["audit", f"{args.pg}/{DB}"]
        py = [sys.executable, "-m", "dbwatch"]
        res = {
            "runs": runs,
            "python_bare": timed([sys.executable, "-c", "pass"], runs),
            "version": timed([*py, "--version"], runs),
            "help": timed([*py, "--help"], runs),
            "audit_empty_pg": timed([*py, *audit], runs),
            "import_ms": {"version": import_ms(["--version"]), "audit_empty_pg": import_ms(audit)},
            "loadavg_1m": round(os.getloadavg()[0], 2),
        }
    finally:
        with psycopg.connect(args.pg + "/postgres", autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
    print(json.dumps(res, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
