"""Cost of opening a PostgreSQL probe session (connect + the timeouts SET + close), the price of
reading PG501's value from reset_val: `python contrib/bench/bench_pg_connect.py [URL] [N]`."""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from dbwatch.targets import open_target, spec_for  # noqa: E402


def main() -> None:
    url = sys.argv[1] if len(sys.argv) > 1 else "postgresql://postgres@127.0.0.1:5432/postgres"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    spec = spec_for(url)
    for _ in range(3):
        open_target(spec).close()
    t = time.perf_counter()
    for _ in range(n):
        open_target(spec).close()
    print(f"{(time.perf_counter() - t) / n * 1000:.2f} ms per PG probe session (open + close), n={n}")


if __name__ == "__main__":
    main()
