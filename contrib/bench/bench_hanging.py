"""Hanging targets beside healthy ones: do the healthy keep their schedule? (issue 18.5)

N targets, H of them hanging (half accept and never answer, half stall mid-handshake; the
simulator is tests/hangserver.py), the rest the local PostgreSQL. The real daemon runs in
this process (its scheduler, runner with deadlines, state DB, probes) for --minutes; every
healthy cycle's due and actual start are recorded.

    python contrib/bench/bench_hanging.py --targets 200 --hanging 100 --interval 15 --minutes 3
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from hangserver import HangServer  # noqa: E402

from dbwatch.daemon.health import SUBJECT  # noqa: E402
from dbwatch.daemon.loop import Daemon, load_setup  # noqa: E402
from dbwatch.daemon.runner import Slot  # noqa: E402
from dbwatch.daemon.state import State  # noqa: E402
from dbwatch.pipeline import TargetResult  # noqa: E402


class Recording(Daemon):
    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.starts: list[tuple[str, float, float]] = []
        self._rec = threading.Lock()

    def cycle(self, name: str, scheduled: float, slot: Slot | None = None) -> TargetResult | None:
        with self._rec:
            self.starts.append((name, scheduled, time.time()))
        return super().cycle(name, scheduled, slot)


def q(values: list[float], p: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(p * len(values)))], 3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", type=int, default=200)
    ap.add_argument("--hanging", type=int, default=100)
    ap.add_argument("--interval", type=float, default=15.0)
    ap.add_argument("--minutes", type=float, default=3.0)
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("--out", help="write the JSON result here too")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)

    silent, stall = HangServer("silent"), HangServer("pg-stall")
    hung = {f"hung-{i}": (silent if i % 2 else stall).url() for i in range(args.hanging)}
    healthy = {f"ok-{i}": args.pg for i in range(args.targets - args.hanging)}
    with tempfile.TemporaryDirectory(prefix="dbwatch-hang-") as tmp:
        cfg = Path(tmp, "dbwatch.toml")
        cfg.write_text(
            "\n".join(
                f'[[targets]]\nname = "{n}"\nurl = "{u}"\ninterval = "{args.interval:g}s"\n'
                for n, u in (hung | healthy).items()
            )
        )
        setup = load_setup(cfg)
        state = State(Path(tmp, "state.db"))
        d = Recording(cfg, state, setup)
        runner = d._new_runner(d._slot_job)
        sched = d._new_scheduler(runner)
        t0 = time.time()
        time.sleep(args.minutes * 60)
        sched.shutdown(wait=False)
        left = runner.stop(5.0)
        wall = time.time() - t0
        firing = {(r.target, r.subject) for r in state.firing() if r.rule == "DW001"}
        state.close()
    silent.close()
    stall.close()
    ok = [(n, due, st) for n, due, st in d.starts if n.startswith("ok-")]
    late = [st - due for _, due, st in ok]
    steady = [st - due for _, due, st in ok if due >= t0 + min(args.interval, 15.0)]
    # first runs are staggered over min(interval, 15 s); each target then runs every interval
    expected = sum(
        int((wall - (i / max(len(setup.targets), 1)) * min(args.interval, 15.0)) // args.interval)
        + 1
        for i, name in enumerate(sorted(setup.targets))
        if name.startswith("ok-")
    )
    result = {
        "bench": "hanging",
        "targets": args.targets,
        "hanging": args.hanging,
        "interval": args.interval,
        "minutes": args.minutes,
        "healthy_cycles_run": len(ok),
        "healthy_cycles_expected": expected,
        "healthy_lateness_p50": q(late, 0.5),
        "healthy_lateness_p95": q(late, 0.95),
        "healthy_lateness_max": q(late, 1.0),
        "healthy_lateness_p95_after_first_round": q(steady, 0.95),
        "loadavg_1m_at_end": round(os.getloadavg()[0], 1),
        "cpus": os.cpu_count(),
        "hanging_reported_not_answering": sum(1 for n in hung if (n, SUBJECT) in firing),
        "healthy_reported_not_answering": sum(1 for n in healthy if (n, SUBJECT) in firing),
        "hanging_accepted_connections": silent.accepted + stall.accepted,
        "still_running_at_stop": len(left),
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
