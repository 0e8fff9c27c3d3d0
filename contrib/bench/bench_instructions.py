"""Instructions, not seconds: what a start and an idle daemon cycle cost, counted by valgrind.

On a shared or busy machine CPU time moves ±30-100 % between two runs of the same code (the
other tenants' work evicts the caches; RESULTS-fleet.md §2c, §9). The number of user-space
instructions a run executes does not: callgrind counts them (`Collected`), whatever the load.
It is the figure to compare two trees by when the machine cannot be quiet; seconds still say
what a user waits.

- startup: `python -c pass`, `import psycopg`, `import pymysql`, then `python -m dbwatch
  --version` and an audit of an empty PostgreSQL database and MariaDB schema (created here,
  dropped after). dbwatch's own share of an audit is the audit minus the driver's import.
- cycle: one idle target's steady daemon cycle (the real Daemon.cycle, state DB, kept
  session): a child runs A and then B cycles after three warm-up ones; (I(B) - I(A)) / (B - A)
  instructions per cycle, so the interpreter's start and the set-up cancel out.

    python contrib/bench/bench_instructions.py                   # both, PostgreSQL and MariaDB
    DBWATCH_BENCH_ROOT=/tmp/base python contrib/bench/bench_instructions.py   # another tree
    python contrib/bench/bench_instructions.py --smoke           # CI: see --smoke

Needs valgrind (Debian: apt-get install valgrind); the tree's bytecode is compiled first (a
tree imported from source would count the compiler).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(os.environ.get("DBWATCH_BENCH_ROOT") or Path(__file__).resolve().parents[2])
DB = f"dbw_instr_{os.getpid()}"


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED="0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def instructions(argv: list[str]) -> int:
    """User-space instructions the command executed (callgrind's `Collected`)."""
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=900,
    )
    m = re.search(r"Collected : (\d+)", out.stderr)
    if not m:
        raise SystemExit(f"bench_instructions: valgrind gave no count for {argv[1:]}: {out.stderr[-300:]}")
    return int(m.group(1))


def _dbs(pg: str, mysql: bool, create: bool) -> None:
    import psycopg

    with psycopg.connect(pg + "/postgres", autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
        if create:
            c.execute(f'CREATE DATABASE "{DB}"')
    if mysql:
        import pymysql

        mc = pymysql.connect(host="127.0.0.1", user="root", autocommit=True)
        with mc.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{DB}`")
            if create:
                cur.execute(f"CREATE DATABASE `{DB}`")
        mc.close()


def startup(pg: str, mysql: bool, smoke: bool) -> dict[str, int]:
    py = sys.executable
    res = {"python_pass": instructions([py, "-c", "pass"]),
           "version": instructions([py, "-m", "dbwatch", "--version"])}
    if smoke:
        return res
    res["import_psycopg"] = instructions([py, "-c", "import psycopg"])
    res["audit_empty_pg"] = instructions([py, "-m", "dbwatch", "audit", f"{pg}/{DB}"])
    res["dbwatch_share_pg_audit"] = res["audit_empty_pg"] - res["import_psycopg"]
    if mysql:
        res["import_pymysql"] = instructions([py, "-c", "import pymysql"])
        res["audit_empty_mysql"] = instructions([py, "-m", "dbwatch", "audit", f"mysql://root@127.0.0.1:3306/{DB}"])
        res["dbwatch_share_mysql_audit"] = res["audit_empty_mysql"] - res["import_pymysql"]
    return res


def child(url: str, n: int, interval: float = 15.0) -> None:
    """Run n idle cycles of one target after three warm-up ones (under valgrind). The
    per-server reads are shared for half the interval: at 15 s some fall inside the counted
    cycles (how many depends on valgrind's speed); at 3600 s only the warm-up makes them, and
    the count is a target's own cycle (what a fleet pays per target-cycle)."""
    import logging

    sys.path.insert(0, str(ROOT))
    from dbwatch.catalogue import load_catalogue
    from dbwatch.config import Config, DaemonConfig, TargetConfig
    from dbwatch.daemon.loop import Daemon, Setup
    from dbwatch.daemon.state import State
    from dbwatch.targets import spec_for

    logging.basicConfig(level=logging.ERROR)
    tc = TargetConfig(name="t", url=url, interval=interval)
    config = Config(targets=(tc,), daemon=DaemonConfig(max_connections_per_server=10))
    setup = Setup(load_catalogue(), config, {"t": (spec_for(url, "t"), tc)}, ())
    with tempfile.TemporaryDirectory() as tmp:
        state = State(Path(tmp) / "state.db")
        d = Daemon(None, state, setup)
        for _ in range(3 + n):
            d.cycle("t", time.time())
        if d.pool:
            d.pool.discard()
        state.close()


def cycle(url: str, a: int, b: int, interval: float = 15.0) -> int:
    me = str(Path(__file__).resolve())
    ia = instructions([sys.executable, me, "--child", url, str(a), str(interval)])
    ib = instructions([sys.executable, me, "--child", url, str(b), str(interval)])
    return (ib - ia) // (b - a)


def main() -> int:
    if len(sys.argv) in (4, 5) and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) == 5 else 15.0)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432")
    ap.add_argument("--mysql", default="1", help="'' to leave MariaDB out")
    ap.add_argument("--what", choices=("both", "startup", "cycle"), default="both")
    ap.add_argument("--smoke", action="store_true",
                    help="CI: counts `pass` and --version; runs the cycle child once without valgrind")
    ap.add_argument("--json", help="write the result here too")
    ap.add_argument("--interval", type=float, default=15.0,
                    help="the target's interval in the cycle child (3600: per-server reads "
                         "only in the warm-up, a stable count on a shared server)")
    args = ap.parse_args()
    if not shutil.which("valgrind"):
        print("bench_instructions: valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    subprocess.run([sys.executable, "-m", "compileall", "-q", "dbwatch"], cwd=ROOT, env=_env(),
                   check=True, capture_output=True)
    mysql = bool(args.mysql) and not args.smoke
    res: dict[str, Any] = {"root": str(ROOT), "loadavg_1m": round(os.getloadavg()[0], 2)}
    _dbs(args.pg, mysql, create=True)
    try:
        if args.what in ("both", "startup"):
            res["startup"] = startup(args.pg, mysql, args.smoke)
        if args.what in ("both", "cycle") and args.smoke:
            # valgrind runs Python 20-50x slower: two counted children would take a minute
            subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", f"{args.pg}/{DB}", "2"],
                           cwd=ROOT, env=_env(), check=True, timeout=120)
            res["cycle"] = {"ran_uncounted": 2}
        elif args.what in ("both", "cycle"):
            a, b = 10, 110
            res["cycle"] = {"postgresql": cycle(f"{args.pg}/{DB}", a, b, args.interval)}
            if mysql:
                res["cycle"]["mysql"] = cycle(f"mysql://root@127.0.0.1:3306/{DB}", a, b, args.interval)
            res["cycle"]["interval"] = args.interval
    finally:
        _dbs(args.pg, mysql, create=False)
    print(json.dumps(res, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
