"""Where the log tail's CPU goes, per deadlock: the tailer's scan (scanner + report parser), the
record (diagnosis, tags, key) and the journal insert, for 100 reports read at once (one poll at
100 deadlocks/s). CPU time, best of 7; run it alternately for two checkouts on a shared machine.
Where the checkout has it (innodb_storm.LazyDerive, else Derive), also `scan_and_records`: the scan
as the daemon's tail runs it, giving each deadlock's stored JSON and what the tail reads of its
record (key, time, schemas, pattern; the record itself built only for findings).
The reports repeat one shape, so after the first run they are built from it (a storm).

Run: python contrib/bench/bench_tail_parts.py [CHECKOUT] [--smoke]   (one JSON line per report shape;
--smoke: CI, 10 reports, best of 2)
"""

from __future__ import annotations

import io
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

SMOKE = "--smoke" in sys.argv
_ARGS = [a for a in sys.argv[1:] if a != "--smoke"]
ROOT = Path(_ARGS[0] if _ARGS else Path(__file__).resolve().parents[2]).resolve()
REPORTS, BEST = (10, 2) if SMOKE else (100, 7)
sys.path[:0] = [str(ROOT), str(ROOT / "contrib" / "bench")]

from bench_tail import one_report

from dbwatch.daemon.state import State
from dbwatch.deadlocks import tailer
from dbwatch.deadlocks.record import deadlock_record

IDS = {"mariadb": ("107448", "107462"), "mysql57": ("41722335", "41722336")}


def best(fn: Callable[[], object], n: int = BEST) -> float:
    out = float("inf")
    for _ in range(n):
        t = time.process_time()
        fn()
        out = min(out, time.process_time() - t)
    return out


def measure(kind: str, tmp: Path) -> dict[str, object]:
    a, b = IDS[kind]
    base = one_report(kind)
    data = "".join(base.replace(a, f"7{n:07d}1").replace(b, f"7{n:07d}2") for n in range(REPORTS))
    raw = data.encode()
    dls = tailer._scan(io.BytesIO(raw), 0, "mysql", False)[0]
    recs = [deadlock_record(d) for d in dls]
    runs = iter(range(1000))

    def insert() -> None:
        st = State(tmp / f"{kind}-{next(runs)}.db")
        with st.transaction():
            for r in recs:
                doc = dict(r.to_json() if hasattr(r, "to_json") else r, source="log_file")
                st.record_deadlock("t", str(doc["key"]), doc.get("at"), doc)

    scan = best(lambda: tailer._scan(io.BytesIO(raw), 0, "mysql", False))
    record = best(lambda: [deadlock_record(d) for d in dls])
    ins = best(insert)
    both = None
    try:
        from dbwatch.deadlocks import live
        from dbwatch.parsers import innodb_storm
    except ImportError:
        pass
    else:
        if hasattr(innodb_storm, "LazyDerive"):  # the tail's own: records built when asked
            def derive() -> object:
                return innodb_storm.LazyDerive(live._logged, live._ATTRS)
        elif hasattr(innodb_storm, "Derive"):
            def derive() -> object:
                return innodb_storm.Derive(live._logged)
        else:
            derive = None  # type: ignore[assignment]
        if derive is not None:
            both = best(
                lambda: tailer._scan(io.BytesIO(raw), 0, "mysql", False, derive=derive())
            )
    return {
        "checkout": str(ROOT),
        "report": kind,
        "deadlocks": len(dls),
        "scan_ms_per_deadlock": round(scan * 1000 / REPORTS, 3),
        "record_ms_per_deadlock": round(record * 1000 / REPORTS, 3),
        "insert_ms_per_deadlock": round(ins * 1000 / REPORTS, 3),
        "scan_and_records_ms_per_deadlock": None if both is None else round(both * 1000 / REPORTS, 3),
    }


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="dbwatch-bench-tail-parts-"))
    for kind in IDS:
        print(json.dumps(measure(kind, tmp)))


if __name__ == "__main__":
    main()
