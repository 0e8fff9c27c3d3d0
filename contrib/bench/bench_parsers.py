"""Benchmark the InnoDB parsers: a 1 MB status text and an error log with 10,000 deadlocks.

Run: python contrib/bench/bench_parsers.py [--repeat N]   (prints one JSON object)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from dbwatch.parsers.errorlog import iter_deadlocks

try:  # the chunked byte path `deadlocks --log` uses (absent before the deadlocks branch)
    from dbwatch.parsers.errorlog import CHUNK, iter_deadlocks_bytes
except ImportError:  # pragma: no cover
    iter_deadlocks_bytes = None  # type: ignore[assignment]
from dbwatch.parsers.innodb_status import parse_status

FIX = ROOT / "tests" / "fixtures" / "innodb"
STATUS_LIMIT = 1_048_576        # the server's cap on the status text

TRX = """---TRANSACTION {tid}, ACTIVE {age} sec starting index read
mysql tables in use 1, locked 1
LOCK WAIT 2 lock struct(s), heap size 1128, 1 row lock(s)
MariaDB thread id {th}, OS thread handle 139689786504896, query id {q} localhost 127.0.0.1 root Sending data
SELECT * FROM `jobs` WHERE `queue` = 'default' AND ((`reserved_at` IS NULL and `available_at` <= 1795310916) OR (`reserved_at` <= 1795310826)) ORDER BY `id` ASC limit 1 FOR UPDATE
------- TRX HAS BEEN WAITING 32075 us FOR THIS LOCK TO BE GRANTED:
RECORD LOCKS space id 9 page no 9 n bits 824 index jobs_queue_index of table `test`.`jobs` trx id {tid} lock_mode X waiting
Record lock, heap no 6 PHYSICAL RECORD: n_fields 2; compact format; info bits 0
 0: len 7; hex 64656661756c74; asc default;;
 1: len 8; hex 0000000000000005; asc         ;;

------------------
---TRANSACTION (0x7f0c1c773d80), not started
0 lock struct(s), heap size 1128, 0 row lock(s)
"""


def one_mb_status() -> str:
    """The real delete-vs-claim capture, its TRANSACTIONS list padded to the 1 MB cap."""
    base = (FIX / "mariadb-laravel-queue-index.txt").read_text()
    head, sep, tail = base.partition("LIST OF TRANSACTIONS FOR EACH SESSION:\n")
    budget = STATUS_LIMIT - len(head) - len(sep) - len(tail)
    parts: list[str] = []
    size, i = 0, 0
    while True:
        block = TRX.format(tid=200_000 + i, age=i % 600, th=1000 + i, q=5_000_000 + i)
        if size + len(block) > budget:
            break
        parts.append(block)
        size += len(block)
        i += 1
    return head + sep + "".join(parts) + tail


def error_log(deadlocks: int) -> list[str]:
    block = (FIX / "mariadb-error-log-excerpt.log").read_text().splitlines(keepends=True)
    start = next(i for i, ln in enumerate(block) if "deadlock detected" in ln)
    end = next(i for i, ln in enumerate(block) if "WE ROLL BACK" in ln) + 1
    one = block[start:end]
    return one * deadlocks


def timed(fn: Callable[[], object], repeat: int
          ) -> tuple[float, float, float, float, object]:
    """(median, best) wall seconds and (median, best) CPU seconds: the best run shows the
    cost on an idle machine; CPU time is less disturbed by neighbours than wall time."""
    times, cpus, result = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return (statistics.median(times), min(times), statistics.median(cpus), min(cpus), result)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--deadlocks", type=int, default=10_000)
    args = ap.parse_args()
    status = one_mb_status()
    t_status, best_status, c_status, cbest_status, parsed = timed(
        lambda: parse_status(status), args.repeat)
    # Entries' details are parsed on first access: also time reading every one of them.
    t_full, best_full, c_full, cbest_full, _ = timed(
        lambda: [t.to_dict() for t in parse_status(status).transactions], args.repeat)
    log = error_log(args.deadlocks)
    log_bytes = sum(len(ln.encode()) for ln in log)
    t_log, best_log, c_log, cbest_log, found = timed(lambda: sum(1 for _ in iter_deadlocks(log)),
                                   max(1, args.repeat // 3))
    file_path = None
    if iter_deadlocks_bytes is not None:
        blob = "".join(log).encode()
        chunks = [blob[i:i + CHUNK] for i in range(0, len(blob), CHUNK)]
        t_b, best_b, c_b, cbest_b, found_b = timed(
            lambda: sum(1 for _ in iter_deadlocks_bytes(chunks)), max(1, args.repeat // 3))
        file_path = {"deadlocks": found_b, "median_s": round(t_b, 3), "best_s": round(best_b, 3),
                     "median_cpu_s": round(c_b, 3),
                     "mb_per_s": round(log_bytes / 1e6 / t_b, 1),
                     "mb_per_cpu_s": round(log_bytes / 1e6 / c_b, 1)}
    mb = len(status.encode()) / 1e6
    print(json.dumps({
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "processor": platform.processor() or platform.machine()},
        "status_parse": {"bytes": len(status.encode()), "transactions":
                         len(parsed.transactions),  # type: ignore[attr-defined]
                         "median_ms": round(t_status * 1000, 2),
                         "best_ms": round(best_status * 1000, 2),
                         "median_cpu_ms": round(c_status * 1000, 2),
                         "best_cpu_ms": round(cbest_status * 1000, 2),
                         "mb_per_s": round(mb / t_status, 1), "target_ms": 50,
                         "with_every_entry_to_dict": {
                             "median_ms": round(t_full * 1000, 2),
                             "best_ms": round(best_full * 1000, 2),
                             "median_cpu_ms": round(c_full * 1000, 2),
                             "best_cpu_ms": round(cbest_full * 1000, 2)}},
        "error_log_parse": {"deadlocks": found, "bytes": log_bytes, "lines": len(log),
                            "median_s": round(t_log, 3), "best_s": round(best_log, 3),
                            "median_cpu_s": round(c_log, 3), "best_cpu_s": round(cbest_log, 3),
                            "mb_per_s": round(log_bytes / 1e6 / t_log, 1),
                            "mb_per_cpu_s": round(log_bytes / 1e6 / c_log, 1),
                            "deadlocks_per_s": round(int(found) / t_log)},  # type: ignore[call-overload]
        "error_log_file_path": file_path,
        "repeat": args.repeat, "load_average": list(os.getloadavg()),
    }, indent=2))


if __name__ == "__main__":
    main()
