"""Instructions per idle target-cycle of each phase of a daemon cycle, counted by callgrind
inside the phase only (`--toggle-collect`: the phase is called through `sys.call_tracing`,
whose C function is the toggle), so nothing but the phase's own work is counted.

- phases: `probes` (pipeline.run_probes), `rules` (pipeline.evaluate), `state` (the state,
  alerts and metrics: Daemon._after_probe), `cycle` (Daemon.cycle whole), or
  `module:function` / `module:Class.method` (that function's inclusive count, patched on its
  module or class: a name imported elsewhere is not seen);
- clocks: `hit` — one target, the probes' share clock held still (every shared read and ttl
  cache is the cycle before's: bench_floor's and bench_instructions' back-to-back cycles);
  `fleet` — 8 targets (databases of one server) cycled in turn, the share clock moving 15 s
  a round: every target-cycle sees new shared reads, each serving the 8 targets (as a
  fleet's server's reads serve its targets; at 1,000 targets each serves hundreds, so the
  per-read work counted here is an upper bound);
- the state's group clock moves 1/67 s a target-cycle (1,000 targets at 15 s) and its
  flusher thread is off: the cycles commit their groups, every count is deterministic;
- `--receiver`: one webhook receiver configured (127.0.0.1:9, never delivered: the
  delivery threads are not started), so the state phase routes each cycle's findings.

    python contrib/bench/bench_phases.py --engine pg --clock fleet --phase state
    DBWATCH_BENCH_ROOT=/work/wt/base python contrib/bench/bench_phases.py ...   # another tree
    python contrib/bench/bench_phases.py --smoke    # CI: each phase's child once, uncounted
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_instructions import ROOT, _env

DB = f"dbw_phases_{os.getpid()}"
TARGETS = {"hit": 1, "fleet": 8}
URLS = {"pg": "postgresql://postgres@127.0.0.1:5432", "mysql": "mysql://root@127.0.0.1:3306"}


def child(base: str, phase: str, rounds: int, clock: str, receiver: bool) -> None:
    import gc
    import importlib
    import logging

    gc.disable()  # a collection in the counted part would move the count by ~1 M
    sys.path.insert(0, str(ROOT))
    from dbwatch import pipeline
    from dbwatch.alerts.router import Policy
    from dbwatch.catalogue import load_catalogue
    from dbwatch.config import AlertConfig, Config, DaemonConfig, TargetConfig
    from dbwatch.daemon import statebase
    from dbwatch.daemon.loop import Daemon, Setup
    from dbwatch.daemon.state import State
    from dbwatch.probes import share
    from dbwatch.targets import spec_for

    start, offset, group = time.monotonic(), [0.0], [time.monotonic()]

    class Share:  # share.py's view of time
        def __getattr__(self, name: str) -> Any:
            return getattr(time, name)

        @staticmethod
        def monotonic() -> float:
            return start + offset[0]

    class Group:  # statebase's: 1/67 s a target-cycle
        def __getattr__(self, name: str) -> Any:
            return getattr(time, name)

        @staticmethod
        def monotonic() -> float:
            return group[0]

    share.time = Share()  # type: ignore[assignment]
    statebase.time = Group()  # type: ignore[assignment]
    statebase._flush_loop = lambda ref, cond: None  # type: ignore[assignment]
    logging.basicConfig(level=logging.ERROR)
    names = [f"t{i}" for i in range(TARGETS[clock])]
    tcs = {n: TargetConfig(name=n, url=f"{base}_{i}", interval=15.0) for i, n in enumerate(names)}
    alerts = (AlertConfig(kind="webhook", url="http://127.0.0.1:9/x", name="hook"),) if receiver else ()
    config = Config(targets=tuple(tcs.values()), alerts=alerts,
                    daemon=DaemonConfig(max_connections_per_server=10))
    setup = Setup(load_catalogue(), config, {n: (spec_for(tc.url, n), tc) for n, tc in tcs.items()},
                  tuple(Policy.of(a) for a in alerts))

    def toggled(fn: Any) -> Any:
        def counted(*a: Any, **k: Any) -> Any:
            return sys.call_tracing(lambda: fn(*a, **k), ())
        return counted

    with tempfile.TemporaryDirectory() as tmp:
        state = State(Path(tmp) / "state.db")
        d = Daemon(None, state, setup)
        cycle = d.cycle
        for i in range(3 + rounds):
            if i == 3:  # after the warm-up
                if phase == "probes":
                    pipeline.run_probes = toggled(pipeline.run_probes)  # type: ignore[assignment]
                elif phase == "rules":
                    pipeline.evaluate = toggled(pipeline.evaluate)  # type: ignore[assignment]
                elif phase == "state":
                    d._after_probe = toggled(d._after_probe)  # type: ignore[method-assign]
                elif phase == "cycle":
                    cycle = toggled(d.cycle)
                else:
                    modname, _, qual = phase.partition(":")
                    owner: Any = importlib.import_module(modname)
                    *path, last = qual.split(".")
                    for part in path:
                        owner = getattr(owner, part)
                    setattr(owner, last, toggled(getattr(owner, last)))
            for n in names:
                cycle(n, time.time())
                group[0] += 1 / 67
            if clock == "fleet":
                offset[0] += 15.0
        if d.pool:
            d.pool.discard()
        state.close()


def count(engine: str, phase: str, rounds: int, clock: str, receiver: bool) -> int:
    """Instructions per target-cycle of the phase (callgrind's Collected / target-cycles)."""
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
            "--toggle-collect=_PyEval_CallTracing", sys.executable, str(Path(__file__).resolve()),
            "--child", f"{URLS[engine]}/{DB}", phase, str(rounds), clock, "1" if receiver else ""]
    out = subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=1800,
                         check=False)
    m = re.search(r"Collected : (\d+)", out.stderr)
    if not m:
        raise SystemExit(f"bench_phases: valgrind gave no count: {out.stderr[-500:]}")
    return int(m.group(1)) // (rounds * TARGETS[clock])


def _dbs(engine: str, create: bool) -> None:
    names = [f"{DB}_{i}" for i in range(max(TARGETS.values()))]
    if engine == "pg":
        import psycopg

        with psycopg.connect(URLS["pg"] + "/postgres", autocommit=True) as c:
            for n in names:
                c.execute(f'DROP DATABASE IF EXISTS "{n}" WITH (FORCE)')
                if create:
                    c.execute(f'CREATE DATABASE "{n}"')
        return
    import pymysql

    mc = pymysql.connect(host="127.0.0.1", user="root", autocommit=True)
    with mc.cursor() as cur:
        for n in names:
            cur.execute(f"DROP DATABASE IF EXISTS `{n}`")
            if create:
                cur.execute(f"CREATE DATABASE `{n}`")
    mc.close()


def main() -> int:
    if len(sys.argv) == 7 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], bool(sys.argv[6]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--engine", choices=("pg", "mysql"), default="pg")
    ap.add_argument("--clock", default="hit,fleet", help="hit, fleet or both (comma)")
    ap.add_argument("--phase", default="rules,state", help="phases, comma-separated")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--receiver", action="store_true", help="one webhook receiver configured")
    ap.add_argument("--smoke", action="store_true", help="CI: each child once, uncounted")
    ap.add_argument("--json", help="write the result here too")
    args = ap.parse_args()
    clocks = [c for c in args.clock.split(",") if c]
    phases = [p for p in args.phase.split(",") if p]
    if not set(clocks) <= set(TARGETS):
        ap.error("--clock: hit, fleet")
    if not args.smoke and not shutil.which("valgrind"):
        print("bench_phases: valgrind is not installed", file=sys.stderr)
        return 2
    subprocess.run([sys.executable, "-m", "compileall", "-q", "dbwatch"], cwd=ROOT, env=_env(),
                   check=True, capture_output=True)
    res: dict[str, Any] = {"root": str(ROOT), "engine": args.engine, "receiver": args.receiver,
                           "loadavg_1m": round(os.getloadavg()[0], 2)}
    _dbs(args.engine, create=True)
    try:
        for clock in clocks:
            res[clock] = {}
            for phase in phases:
                if args.smoke:
                    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                                    f"{URLS[args.engine]}/{DB}", phase, "1", clock,
                                    "1" if args.receiver else ""],
                                   cwd=ROOT, env=_env(), check=True, timeout=300)
                    res[clock][phase] = "ran_uncounted"
                    continue
                res[clock][phase] = count(args.engine, phase, args.rounds, clock, args.receiver)
    finally:
        _dbs(args.engine, create=False)
    print(json.dumps(res, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
