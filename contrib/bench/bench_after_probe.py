"""Instructions of an idle daemon cycle after its probes: the rules (`evaluate`) and the state,
alerts and metrics (`Daemon._after_probe`), counted by valgrind (callgrind's `Collected`).

One idle target (an empty PostgreSQL database made here, dropped after), the real
`Daemon.cycle`, state DB and kept session. Each count is (I(B) - I(A)) / (B - A) over two
children running A and B cycles after three warm-up ones, so the interpreter's start and the
set-up cancel out; "after probes" is the full cycle minus the same cycle with `evaluate` and
`_after_probe` replaced by no-ops. Two clocks for the daemon's caches (probes/share.py):

- hit: their clock stands still: every shared server-wide read and ttl-cached section is the
  one of the cycle before (`bench_floor.py`'s and `bench_instructions.py`'s back-to-back
  cycles, where the 7.5 s share interval spans hundreds of cycles);
- fleet: it moves 15 s a cycle: every shared read and ttl cache is refreshed between two
  cycles of a target, as one target of a fleet at `interval = 15` sees them (there the
  probes' part counts the shared reads every cycle, which a fleet shares: compare the
  after-probes part).

    python contrib/bench/bench_after_probe.py
    DBWATCH_BENCH_ROOT=/tmp/base python contrib/bench/bench_after_probe.py   # another tree
    python contrib/bench/bench_after_probe.py --smoke    # CI: the child once, uncounted
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_instructions import ROOT, _env
from bench_instructions import instructions as _counted

DB = f"dbw_after_{os.getpid()}"


def child(url: str, n: int, clock: str, part: str) -> None:
    """n idle cycles after three warm-up ones (under valgrind). The cyclic garbage collector is
    off: a collection falling in one of the two counts and not in the other moved them by
    ±1.5 M instructions (the cycles' own work is what is compared)."""
    import gc
    import logging

    gc.disable()

    sys.path.insert(0, str(ROOT))
    from dbwatch import pipeline
    from dbwatch.catalogue import load_catalogue
    from dbwatch.config import Config, DaemonConfig, TargetConfig
    from dbwatch.daemon.loop import Daemon, Setup
    from dbwatch.daemon.state import State
    from dbwatch.evaluate import Evaluation
    from dbwatch.probes import share
    from dbwatch.targets import spec_for

    real, start, offset = time.monotonic, time.monotonic(), [0.0]
    step = 15.0 if clock == "fleet" else 0.0

    class Clock:  # share.py's view of time: standing still, or 15 s a cycle
        def __getattr__(self, name: str) -> Any:
            return getattr(time, name)

        @staticmethod
        def monotonic() -> float:
            return (real() if step else start) + offset[0]

    share.time = Clock()  # type: ignore[assignment]
    logging.basicConfig(level=logging.ERROR)
    tc = TargetConfig(name="t", url=url, interval=15.0)
    config = Config(targets=(tc,), daemon=DaemonConfig(max_connections_per_server=10))
    setup = Setup(load_catalogue(), config, {"t": (spec_for(url, "t"), tc)}, ())
    with tempfile.TemporaryDirectory() as tmp:
        state = State(Path(tmp) / "state.db")
        d = Daemon(None, state, setup)
        for i in range(3 + n):
            if i == 3 and part == "probes":
                pipeline.evaluate = lambda *a, **k: Evaluation()  # type: ignore[assignment]
                d._after_probe = lambda *a, **k: None  # type: ignore[method-assign]
            d.cycle("t", time.time())
            offset[0] += step
        if d.pool:
            d.pool.discard()
        state.close()


def instructions(args: list[str]) -> int:
    """This file run as a child with `args`, counted (bench_instructions' valgrind call)."""
    return _counted([sys.executable, str(Path(__file__).resolve()), "--child", *args])


def per_cycle(url: str, clock: str, part: str, a: int, b: int) -> int:
    ia = instructions([url, str(a), clock, part])
    ib = instructions([url, str(b), clock, part])
    return (ib - ia) // (b - a)


def _db(pg: str, create: bool) -> None:
    import psycopg

    with psycopg.connect(pg + "/postgres", autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
        if create:
            c.execute(f'CREATE DATABASE "{DB}"')


def main() -> int:
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432")
    ap.add_argument("--clocks", default="hit,fleet")
    ap.add_argument("--smoke", action="store_true", help="CI: the child once per clock, uncounted")
    ap.add_argument("--json", help="write the result here too")
    args = ap.parse_args()
    clocks = [c for c in args.clocks.split(",") if c]
    if not set(clocks) <= {"hit", "fleet"}:
        ap.error("--clocks: hit, fleet")
    if not args.smoke and not shutil.which("valgrind"):
        print("bench_after_probe: valgrind is not installed", file=sys.stderr)
        return 2
    subprocess.run([sys.executable, "-m", "compileall", "-q", "dbwatch"], cwd=ROOT, env=_env(),
                   check=True, capture_output=True)
    res: dict[str, Any] = {"root": str(ROOT), "loadavg_1m": round(os.getloadavg()[0], 2)}
    _db(args.pg, create=True)
    try:
        for clock in clocks:
            url = f"{args.pg}/{DB}"
            if args.smoke:
                for part in ("full", "probes"):
                    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", url,
                                    "2", clock, part], cwd=ROOT, env=_env(), check=True,
                                   timeout=120)
                res[clock] = {"ran_uncounted": 2}
                continue
            full = per_cycle(url, clock, "full", 10, 110)
            probes = per_cycle(url, clock, "probes", 10, 110)
            res[clock] = {"cycle": full, "probes_only": probes, "after_probes": full - probes}
    finally:
        _db(args.pg, create=False)
    print(json.dumps(res, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
