"""What the daemon's scheduling costs per cycle, without any probe: the real Scheduler
(APScheduler) and Runner (slots, deadlines, worker pool) running a job that does nothing, for
N targets at a short interval. Reported: process CPU per cycle (scheduler + runner threads),
context switches per cycle, and the load average.

    python contrib/bench/bench_scheduler.py --targets 1000 --interval 2 --seconds 6
    DBWATCH_BENCH_ROOT=/work/main python contrib/bench/bench_scheduler.py   # another checkout
    python contrib/bench/bench_scheduler.py --smoke                          # CI: seconds
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path

# DBWATCH_BENCH_ROOT: another checkout to measure (the "before" of a change)
sys.path.insert(0, os.environ.get("DBWATCH_BENCH_ROOT") or str(Path(__file__).resolve().parents[2]))

from dbwatch.daemon.runner import Runner, Slot  # noqa: E402
from dbwatch.daemon.scheduler import Scheduler  # noqa: E402
from threadcpu import thread_cpu  # noqa: E402  (this directory: the script's own)


def measure(n: int, interval: float, seconds: float) -> dict[str, object]:
    count = [0]
    lock = threading.Lock()

    def job(slot: Slot) -> None:
        with lock:
            count[0] += 1
        ended = getattr(sched, "ended", None)  # as the daemon's slot job (older checkouts: none)
        if ended is not None:
            ended(slot.name, slot.started)

    runner = Runner(job, 32, 30.0, lambda name, why: None)
    for i in range(n):
        runner.answered(f"t{i}", True)
    # the daemon's way (loop.Daemon._new_scheduler); older checkouts: one submit per target
    batch = {"jobs": runner.submit_all} if hasattr(runner, "submit_all") else {}
    sched = Scheduler(runner.submit, 2, **batch)
    sched.set_targets((f"t{i}", interval) for i in range(n))
    sched.start()
    # every first look done, then every target's first scheduled run staggered in
    while getattr(sched, "awaiting_first_look", lambda: 0)():
        time.sleep(0.05)
    time.sleep(min(interval, 15.0) + 0.5)
    cpu0, n0, ru0 = time.process_time(), count[0], resource.getrusage(resource.RUSAGE_SELF)
    threads0 = thread_cpu()
    time.sleep(seconds)
    cpu1, n1, ru1 = time.process_time(), count[0], resource.getrusage(resource.RUSAGE_SELF)
    threads1 = thread_cpu()
    sched.shutdown()
    runner.stop(5.0)
    cycles = max(n1 - n0, 1)
    switches = ru1.ru_nvcsw - ru0.ru_nvcsw + ru1.ru_nivcsw - ru0.ru_nivcsw
    return {
        "targets": n,
        "interval": interval,
        "cycles": n1 - n0,
        "expected": int(n * seconds / interval),
        "cpu_ms_per_cycle": round(1000 * (cpu1 - cpu0) / cycles, 4),
        "switches_per_cycle": round(switches / cycles, 2),
        "loadavg_1m": round(os.getloadavg()[0], 2),
        # by thread (names without their number): CPU ms and context switches per cycle
        "by_thread": {
            k: (round(1000 * (v[0] - threads0.get(k, (0.0, 0))[0]) / cycles, 4),
                round((v[1] - threads0.get(k, (0.0, 0))[1]) / cycles, 2))
            for k, v in sorted(threads1.items())},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--targets", type=int, default=1000)
    ap.add_argument("--interval", type=float, default=2.0)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--json", help="write the result here too")
    ap.add_argument("--smoke", action="store_true", help="CI: 50 targets, 2 seconds")
    args = ap.parse_args()
    if args.smoke:
        args.targets, args.interval, args.seconds = 50, 1.0, 2.0
    res = measure(args.targets, args.interval, args.seconds)
    print(json.dumps(res))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
