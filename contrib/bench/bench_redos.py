"""Worst-case parse time of hostile text (issue 18 point 2): every sqlpatterns parser and
log reader on the ReDoS fuzzer's inputs at 100 KB; prints the slowest per parser (CPU time,
best of three).

    PYTHONPATH=. python3 contrib/bench/bench_redos.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from test_sqlpatterns_redos import (  # noqa: E402
    FREEZER,
    LOG_FORMATS,
    PARSERS,
    UNITS,
    _log,
    _text,
)


def best(run, text: str) -> float:  # type: ignore[no-untyped-def]
    out = float("inf")
    for _ in range(3):
        start = time.process_time()  # CPU time: the machine is shared, wall time waits on others
        run(text)
        out = min(out, time.process_time() - start)
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        runs = dict(PARSERS)
        for fmt in LOG_FORMATS:
            reader = _log(fmt)
            runs["log:" + fmt] = lambda t, r=reader: r(t, Path(tmp))  # type: ignore[misc]
        print(f"{'parser':28} {'170-byte /**/':>14} {'worst 100 KB':>13}  input")
        for name, run in runs.items():
            freezer = best(run, FREEZER)
            worst, unit = max((best(run, _text(u, 100_000)), k) for k, u in UNITS.items())
            print(f"{name:28} {freezer * 1000:11.2f} ms {worst * 1000:10.1f} ms  {unit}")


if __name__ == "__main__":
    main()
