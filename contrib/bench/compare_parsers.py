"""CPU throughput of the InnoDB parsers of one checkout, for side-by-side runs on a busy machine.

Run alternately for two checkouts (same load), e.g.:
    python contrib/bench/compare_parsers.py /work/main; python contrib/bench/compare_parsers.py .
Prints MB per CPU-second (best of N) for the line path, the byte path (`deadlocks --log`) and 1 MB
of status text, on bench_parsers.py's generated inputs.
"""
from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    sys.path[:0] = [str(root), str(root / "contrib" / "bench")]
    bench = importlib.import_module("bench_parsers")
    errorlog = importlib.import_module("dbwatch.parsers.errorlog")
    status = importlib.import_module("dbwatch.parsers.innodb_status")
    lines = bench.error_log(2000)
    data = ("\n".join(lines) + "\n").encode()
    chunks = [data[i : i + 4 * 1024 * 1024] for i in range(0, len(data), 4 * 1024 * 1024)]
    text = bench.one_mb_status()

    def best(fn, n: int = 5) -> float:  # type: ignore[no-untyped-def]
        out = float("inf")
        for _ in range(n):
            t = time.process_time()
            fn()
            out = min(out, time.process_time() - t)
        return out

    mb = len(data) / 1e6
    print(json.dumps({
        "checkout": str(root),
        "line_path_mb_per_cpu_s": round(mb / best(lambda: sum(1 for _ in errorlog.iter_deadlocks(lines))), 1),
        "byte_path_mb_per_cpu_s": round(mb / best(lambda: sum(1 for _ in errorlog.iter_deadlocks_bytes(iter(chunks)))), 1),
        "status_mb_per_cpu_s": round(len(text) / 1e6 / best(lambda: status.parse_status(text), 7), 1),
    }))


if __name__ == "__main__":
    main()
