"""The state phase of an idle cycle alone: `Daemon._after_probe` (findings, alerts, deadlock
accounting, series points, the cycle record, metrics) replayed on one real cycle's result.

One idle target (an empty PostgreSQL database made here, dropped after) runs five real
cycles (`Daemon.cycle`); the last cycle's result is then fed to `_after_probe` `--cycles`
times, the state's clock (`statebase.time.monotonic`) moving 1/`--rate` s per cycle: the
rate at which a daemon's cycles end (1,000 targets at 15 s: 67 a second), which decides how
many cycles a group commit takes (statebase.GROUP_TICK). Reported per cycle: SQLite
statements (sqlite3 trace callback), WAL bytes written (the -wal file's growth; checkpoints
off), the process's CPU, and with --instructions user-space instructions (callgrind,
(I(B) - I(A)) / (B - A) over two children, so the set-up cancels out).

    python contrib/bench/bench_state_phase.py [--rate 67] [--cycles 2000] [--instructions]
    python contrib/bench/bench_state_phase.py --smoke    # CI: 200 cycles, no valgrind
    DBWATCH_BENCH_ROOT=/work/wt/base python contrib/bench/bench_state_phase.py   # another tree
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(os.environ.get("DBWATCH_BENCH_ROOT") or Path(__file__).resolve().parents[2])
sys.path.insert(0, str(Path(__file__).resolve().parent))

DB = f"dbw_statephase_{os.getpid()}"


def child(url: str, n: int, rate: float, report: bool) -> None:
    import gc
    import logging
    import sqlite3

    gc.disable()
    sys.path.insert(0, str(ROOT))
    from dbwatch.catalogue import load_catalogue
    from dbwatch.config import Config, DaemonConfig, TargetConfig
    from dbwatch.daemon import statebase
    from dbwatch.daemon.loop import Daemon, Setup
    from dbwatch.daemon.state import State
    from dbwatch.targets import spec_for

    logging.basicConfig(level=logging.ERROR)
    clock = [time.monotonic()]

    class Clock:  # statebase's view of time: 1/rate s a cycle
        def __getattr__(self, name: str) -> Any:
            return getattr(time, name)

        @staticmethod
        def monotonic() -> float:
            return clock[0]

    statebase.time = Clock()  # type: ignore[attr-defined]
    tc = TargetConfig(name="t", url=url, interval=15.0)
    config = Config(targets=(tc,), daemon=DaemonConfig(max_connections_per_server=10))
    setup = Setup(load_catalogue(), config, {"t": (spec_for(url, "t"), tc)}, ())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.db"
        state = State(path)
        raw = state._db
        assert isinstance(raw, sqlite3.Connection)
        raw.execute("PRAGMA wal_autocheckpoint=0")
        d = Daemon(None, state, setup)
        got: list[tuple[Any, ...]] = []
        real = Daemon._after_probe

        def keep(self: Daemon, *a: Any) -> None:
            got[:] = [a]
            real(self, *a)

        Daemon._after_probe = keep  # type: ignore[method-assign]
        for _ in range(5):
            d.cycle("t", time.time())
        Daemon._after_probe = real  # type: ignore[method-assign]
        args = got[0]
        sent: list[str] = []
        raw.set_trace_callback(sent.append) if report else None
        wal = Path(str(path) + "-wal")
        w0, c0 = wal.stat().st_size, _cpu()
        step = 1.0 / rate
        for _ in range(n):
            clock[0] += step
            d._after_probe(*args)
        c1 = _cpu()
        raw.set_trace_callback(None)
        w1 = wal.stat().st_size
        if report:
            print(json.dumps({
                "statements_per_cycle": round(len(sent) / n, 2),
                "begins_per_cycle": round(sum(s.startswith("BEGIN") for s in sent) / n, 3),
                "wal_bytes_per_cycle": round((w1 - w0) / n, 1),
                "cpu_ms_per_cycle": round(1000 * (c1 - c0) / n, 4),
            }))
        state.close()


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432")
    ap.add_argument("--cycles", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=67.0, help="cycles ending per second")
    ap.add_argument("--instructions", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="CI: 200 cycles, uncounted")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.smoke:
        args.cycles, args.instructions = 200, False
    if args.child:
        child(args.child[0], int(args.child[1]), args.rate, args.child[2] == "report")
        return 0
    import psycopg

    with psycopg.connect(args.pg + "/postgres", autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{DB}"')
    url = f"{args.pg}/{DB}"
    try:
        me = [sys.executable, str(Path(__file__).resolve()), "--rate", str(args.rate), "--child"]
        env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED="0")
        out = subprocess.run([*me, url, str(args.cycles), "report"], env=env,
                             capture_output=True, text=True, check=True)
        res: dict[str, Any] = {"root": str(ROOT), "rate": args.rate, "cycles": args.cycles,
                               **json.loads(out.stdout.strip().splitlines()[-1])}
        if args.instructions:
            from bench_instructions import instructions

            a, b = 100, 400
            ia = instructions([*me, url, str(a), "quiet"])
            ib = instructions([*me, url, str(b), "quiet"])
            res["instructions_per_cycle"] = round((ib - ia) / (b - a))
        res["loadavg_1m"] = os.getloadavg()[0]
        print(json.dumps(res, indent=2))
    finally:
        with psycopg.connect(args.pg + "/postgres", autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
