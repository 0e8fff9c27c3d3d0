"""Benchmark: query-log analysis throughput (MB/s) and peak memory on a generated MariaDB
general log with Laravel-style worker traffic. Prints JSON.

    python contrib/bench/bench_logs.py                 # ~200 MB, and a 1/4 size run for memory
    python contrib/bench/bench_logs.py --size 1024     # 1 GB
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = ("/usr/sbin/mariadbd, Version: 10.11.6-MariaDB-0+deb12u1 (Debian 12). started with:\n"
          "Tcp port: 3306  Unix socket: /run/mysqld/mysqld.sock\n"
          "Time\t\t    Id Command\tArgument\n")
CLAIM = ("select * from `jobs` where `queue` = {q} and ((`reserved_at` is null and "
         "`available_at` <= {n}) or (`reserved_at` <= {o})) order by `id` asc limit 1 for update")


def _worker_lines(rng: random.Random, cid: int, job: int, now: int) -> list[str]:
    """One job through a Laravel worker with PDO server-side prepares (as Laravel does)."""
    p = f"\t\t{cid:>6} "
    lines = [f"{p}Query\tSTART TRANSACTION",
             f"{p}Prepare\t" + CLAIM.format(q="?", n="?", o="?"),
             f"{p}Execute\t" + CLAIM.format(q="'default'", n=f"'{now}'", o=f"'{now - 90}'"),
             f"{p}Close stmt\t",
             f"{p}Prepare\tupdate `jobs` set `reserved_at` = ?, `attempts` = ? where `id` = ?",
             (f"{p}Execute\tupdate `jobs` set `reserved_at` = '{now}', `attempts` = '1' "
             f"where `id` = '{job}'"),
             f"{p}Close stmt\t", f"{p}Query\tCOMMIT"]
    if rng.random() < 0.3:     # the job itself does some work on other tables
        lines += [(f"{p}Query\tselect * from `users` where `users`.`id` = {rng.randint(1, 10**6)} "
                  "limit 1"),
                  (f"{p}Query\tupdate `orders` set `status` = 'sent',\n    `updated_at` = "
                  f"'2024-01-15 10:00:00' where `id` = {rng.randint(1, 10**7)}")]
    lines += [f"{p}Query\tSTART TRANSACTION",
              f"{p}Prepare\tselect * from `jobs` where `id` = ? limit 1 for update",
              f"{p}Execute\tselect * from `jobs` where `id` = '{job}' limit 1 for update",
              f"{p}Close stmt\t",
              f"{p}Prepare\tdelete from `jobs` where `id` = ?",
              f"{p}Execute\tdelete from `jobs` where `id` = '{job}'",
              f"{p}Close stmt\t", f"{p}Query\tCOMMIT"]
    return lines


def _producer_lines(rng: random.Random, cid: int, now: int) -> list[str]:
    payload = json.dumps({"uuid": f"{rng.getrandbits(128):032x}", "displayName": "App\\Jobs\\Mail",
                          "job": "Illuminate\\Queue\\CallQueuedHandler@call", "maxTries": 3,
                          "data": {"command": "O:13:\"App\\Jobs\\Mail\":1:{s:2:\"to\";"
                                   + "x" * rng.randint(200, 900) + "}"}})
    esc = payload.replace("\\", "\\\\").replace("'", "\\'")
    return [(f"\t\t{cid:>6} Query\tinsert into `jobs` (`queue`, `attempts`, `reserved_at`, "
            f"`available_at`, `created_at`, `payload`) values ('default', 0, NULL, {now}, "
            f"{now}, '{esc}')")]


def generate(path: Path, size_mb: float, seed: int = 1) -> int:
    rng = random.Random(seed)
    target = int(size_mb * (1 << 20))
    written, job, now = 0, 0, 1_700_000_000
    workers = list(range(100, 124))
    with path.open("w") as f:
        f.write(HEADER)
        while written < target:
            now += 1
            chunk = [f"{time.strftime('%y%m%d %H:%M:%S', time.gmtime(now))}\t{7:>6} Query\tselect 1"]
            for _ in range(200):
                job += 1
                cid = rng.choice(workers)
                chunk += _producer_lines(rng, 7, now) + _worker_lines(rng, cid, job, now)
            text = "\n".join(chunk) + "\n"
            f.write(text)
            written += len(text)
    return path.stat().st_size


def measure(path: Path) -> dict[str, object]:
    from dbwatch.sqlpatterns.logs import analyse_logs
    t0, c0 = time.perf_counter(), time.process_time()
    a = analyse_logs([path])
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    size = path.stat().st_size
    # CPU time too: on a shared machine wall-clock MB/s mostly measures the neighbours.
    return {"bytes": size, "seconds": round(dt, 2), "mb_per_s": round(size / dt / (1 << 20), 1),
            "cpu_seconds": round(cpu, 2), "mb_per_cpu_s": round(size / cpu / (1 << 20), 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "statements": a.stats.statements, "sqlparse_runs": a.stats.sqlparse_runs,
            "findings": {f.rule: f.evidence["count"] for f in a.findings}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=float, default=200, help="log size in MB (default 200)")
    ap.add_argument("--keep", help="write the generated log here and keep it")
    ap.add_argument("--measure", help=argparse.SUPPRESS)   # child process: one measurement
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(Path(args.measure))))
        return
    tmp = Path(tempfile.mkdtemp(prefix="dwbench-"))
    runs = []
    for size in (args.size / 4, args.size):
        path = Path(args.keep) if args.keep and size == args.size else tmp / f"g{int(size)}.log"
        generate(path, size)
        # A fresh process per size: ru_maxrss is the peak of that analysis alone.
        out = subprocess.run([sys.executable, __file__, "--measure", str(path)], check=True,
                             capture_output=True, text=True, env={**os.environ})
        runs.append(json.loads(out.stdout))
        if path.parent == tmp:
            path.unlink()
    os.rmdir(tmp)
    # The load average says how far the wall-clock figures can be trusted on a shared machine.
    print(json.dumps({"log": "mariadb general log, Laravel worker traffic (PDO prepares)",
                      "python": sys.version.split()[0], "runs": runs,
                      "load_average": [round(x, 2) for x in os.getloadavg()]}, indent=1))


if __name__ == "__main__":
    main()
