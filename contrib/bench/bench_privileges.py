"""What the privilege probes (pg.privileges, my.privileges: DW001/DW002) add to one audit.

    python contrib/bench/bench_privileges.py [PG_URL] [MYSQL_URL] [--runs N]

Prints the median wall time of each probe over N fresh runs (each on its own session)."""
from __future__ import annotations

import argparse
import statistics
import time

from dbwatch.probes import PROBES
from dbwatch.targets import open_target, spec_for


def measure(url: str, probe: str, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        conn = open_target(spec_for(url))
        try:
            t0 = time.perf_counter()
            PROBES[probe].fn(conn)
            out.append(time.perf_counter() - t0)
        finally:
            conn.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pg", nargs="?", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("my", nargs="?", default="mysql://root@127.0.0.1:3306/test")
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    for url, probe in ((args.pg, "pg.privileges"), (args.my, "my.privileges")):
        t = measure(url, probe, args.runs)
        print(f"{probe}: median {statistics.median(t) * 1000:.1f} ms, "
              f"max {max(t) * 1000:.1f} ms over {len(t)} runs ({url})")


if __name__ == "__main__":
    main()
