"""Cost of tailing a server log for deadlocks: a MariaDB error log growing by R deadlocks/s,
read by the daemon's hook (dbwatch.deadlocks.live.tail_findings) once per second.

Run: python contrib/bench/bench_tail.py [--rate 100] [--seconds 20] [--report mysql57] [--vary]
[--smoke]   (prints one JSON object)
--vary: besides the trx ids, every report gets its own thread ids, query ids and log timestamp
(the second moves with the run), as a real storm prints them; without it only the trx ids change.
CPU is the process CPU time spent inside the hook (parsing, hashing, recording in SQLite),
as a share of one core over the run's wall time; `after_learning_*` the same from the third
poll on (the first two learn the storm's shapes and pay the process's first-use costs: ~20 ms,
a third of a 10 s MySQL 5.7 run's CPU).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# DBWATCH_BENCH_ROOT: another checkout to measure (the "before" of a change)
ROOT = Path(os.environ.get("DBWATCH_BENCH_ROOT") or Path(__file__).resolve().parents[2])
sys.path.insert(0, str(ROOT))

from dbwatch.daemon.state import State  # noqa: E402
from dbwatch.deadlocks.live import tail_findings  # noqa: E402

FIXTURES = {
    # a MariaDB 10.11 legacy-index deadlock: 24 KB, 36 records listed under CONFLICTING WITH
    "mariadb": ROOT / "tests" / "fixtures" / "innodb" / "mariadb-error-log-excerpt.log",
    # a MySQL 5.7 Laravel claim-vs-delete: 2.8 KB
    "mysql57": ROOT / "tests" / "fixtures" / "innodb" / "variants"
    / "mysql57-laravel-jobs-cut-delete.log",
}


# --vary: what else changes from one report of a storm to the next
OTHERS: dict[str, tuple[tuple[str, Callable[[int], str]], ...]] = {
    "mariadb": (
        ("thread id 522,", lambda n: f"thread id {500 + n % 97},"),
        ("thread id 520,", lambda n: f"thread id {600 + n % 89},"),
        (" 522 [Note]", lambda n: f" {500 + n % 97} [Note]"),
        ("query id 164331", lambda n: f"query id {164331 + 2 * n}"),
        ("query id 164330", lambda n: f"query id {164330 + 2 * n}"),
        ("2:01:37", lambda n: f"2:{1 + n // 6000 % 59:02d}:{n // 100 % 60:02d}"),
    ),
    "mysql57": (
        ("thread id 2240,", lambda n: f"thread id {2000 + n % 997},"),
        ("thread id 2245,", lambda n: f"thread id {3000 + n % 991},"),
        (" 2245 [Note]", lambda n: f" {3000 + n % 991} [Note]"),
        ("query id 9113354", lambda n: f"query id {9113354 + 2 * n}"),
        ("query id 9113356", lambda n: f"query id {9113356 + 2 * n}"),
        ("08:15:42.318", lambda n: f"08:{15 + n // 6000 % 44}:{n // 100 % 60:02d}.{n % 900 + 100}"),
    ),
}


def vary(text: str, n: int, others: tuple[tuple[str, Callable[[int], str]], ...]) -> str:
    """Every `others` text replaced at once (one after the other, the first rule's thread id
    could be rewritten by the second: both transactions on one thread, a report no server
    prints)."""
    if not others:
        return text
    new = dict(others)
    return re.sub("|".join(map(re.escape, new)), lambda m: new[m.group()](n), text)


def one_report(kind: str = "mariadb") -> str:
    lines = FIXTURES[kind].read_text().splitlines(keepends=True)
    start = next(i for i, ln in enumerate(lines) if "deadlock detected" in ln)
    end = next(i for i, ln in enumerate(lines) if "WE ROLL BACK" in ln) + 1
    return "".join(lines[start:end])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rate", type=int, default=100)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--report", choices=sorted(FIXTURES), default="mariadb")
    ap.add_argument("--vary", action="store_true", help="thread/query ids and timestamps vary")
    ap.add_argument("--smoke", action="store_true", help="CI: 20 deadlocks/s for 2 s")
    args = ap.parse_args()
    if args.smoke:
        args.rate, args.seconds = 20, 2
    base = one_report(args.report)
    ids = ("107448", "107462") if args.report == "mariadb" else ("41722335", "41722336")
    others = OTHERS[args.report] if args.vary else ()
    tmp = Path(tempfile.mkdtemp(prefix="dbwatch-bench-tail-"))
    log = tmp / "error.log"
    log.write_text("")
    state = State(tmp / "state.db")
    tail_findings(state, "t", "mysql", str(log))
    n = 0
    cpu = 0.0
    polls: list[float] = []
    walls: list[float] = []  # each poll's second (its write, the hook, the sleep)
    wrote = 0
    t0 = time.perf_counter()
    for _ in range(args.seconds):
        tick = time.perf_counter()
        with log.open("a") as fh:
            for _ in range(args.rate):
                text = base.replace(ids[0], f"7{n:07d}1").replace(ids[1], f"7{n:07d}2")
                text = vary(text, n, others)
                fh.write(text)
                wrote += len(text)
                n += 1
        c0 = time.process_time()
        tail_findings(state, "t", "mysql", str(log))
        polls.append(time.process_time() - c0)
        cpu += polls[-1]
        time.sleep(max(0.0, 1.0 - (time.perf_counter() - tick)))
        walls.append(time.perf_counter() - tick)
    wall = time.perf_counter() - t0
    recorded = state.deadlock_count("t")
    shapes = getattr(sys.modules.get("dbwatch.parsers.innodb_storm"), "SHAPES", None)
    print(json.dumps({
        "report": args.report, "report_bytes": len(base), "rate_per_s": args.rate, "seconds": args.seconds, "deadlocks_written": n,
        "recorded": recorded, "bytes": wrote, "hook_cpu_s": round(cpu, 3),
        "share_of_one_core_pct": round(100 * cpu / wall, 2),
        "cpu_ms_per_deadlock": round(1000 * cpu / max(n, 1), 3), "vary": args.vary,
        # from the third poll on: the storm's shapes learnt, the process's first-use costs
        # paid (a dataclass's generated __init__, a parser's first run); WAL checkpoints in
        # (the headline figures above include everything)
        "after_learning_share_pct": round(100 * sum(polls[2:]) / sum(walls[2:]), 2)
        if len(polls) > 2 else None,
        "after_learning_ms_per_deadlock": round(1000 * sum(polls[2:]) / (args.rate * (len(polls) - 2)), 3)
        if len(polls) > 2 else None,
        "built_from_shapes": getattr(shapes, "built", None),
        # pieces whose record dumps a learnt skeleton dropped (innodb_storm layer 0)
        "slimmed_by_skeleton": getattr(shapes, "skimmed", None),
        # each poll's CPU: the first ones learn the storm's shapes (parses, templates)
        "poll_cpu_ms": [round(1000 * c, 2) for c in polls],
    }, indent=2))


if __name__ == "__main__":
    main()
