"""What the state file's page size does to the log tail's journal and to a fleet's small commits.

SQLite's page size is fixed when a state file is created (dbwatch creates them with 4 KB, SQLite's
default). A storm's stored deadlock is a ~2.4-3 KB JSON row: one 4 KB page each, one WAL frame
(two write calls) and one checkpoint copy a deadlock. A fleet's cycle commit touches a few rows
(its cycle row, its series points): one frame per page touched, however big the page.

For each page size, alternately, on a fresh file: (a) the tail: 40 commits of 100 stored
deadlocks (the bench_tail reports, --vary, as the daemon's tail stores them), CPU µs a row,
insert and commit (with its share of WAL checkpoints) apart; (b) the fleet: 4,000 cycle commits of
500 targets in turn (record_cycle + 12 series points, relaxed commit as the daemon's loop), CPU µs
a commit.

Run: python contrib/bench/bench_journal_pages.py [--reps 3] [--report mariadb] [--smoke]
(prints one JSON object)
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(os.environ.get("DBWATCH_BENCH_ROOT") or Path(__file__).resolve().parents[2])
sys.path[:0] = [str(ROOT), str(ROOT / "contrib" / "bench")]

from bench_tail import OTHERS, one_report, vary

from dbwatch.daemon.state import State
from dbwatch.deadlocks import live, tailer
from dbwatch.parsers.innodb_storm import LazyDerive

IDS = {"mariadb": ("107448", "107462"), "mysql57": ("41722335", "41722336")}


def stored_rows(kind: str, polls: int) -> list[list[tuple[str, object, str]]]:
    base = one_report(kind)
    a, b = IDS[kind]
    out = []
    for k in range(polls):
        text = "".join(
            vary(base.replace(a, f"7{n:07d}1").replace(b, f"7{n:07d}2"), n, OTHERS[kind])
            for n in range(k * 100, k * 100 + 100)
        )
        d = LazyDerive(live._logged, live._ATTRS)
        tailer._scan(io.BytesIO(text.encode()), 0, "mysql", False, derive=d)
        out.append([(str(lt.values[0]), lt.values[1], s) for lt, s in d.out])
    return out


def fresh(page: int) -> State:
    path = os.path.join(tempfile.mkdtemp(prefix="dbwatch-pages-"), "state.db")
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA page_size={page}")
    db.execute("VACUUM")  # an empty file takes the page size now
    db.close()
    st = State(path)
    got = st.query("PRAGMA page_size")[0]["page_size"]
    assert got == page, (got, page)
    return st


def tail(page: int, batches: list[list[tuple[str, object, str]]]) -> tuple[float, float]:
    st = fresh(page)
    ins = com = 0.0
    rows = 0
    for rows_ in batches:
        c0 = time.process_time()
        with st.transaction():
            for key, at, stored in rows_:
                st.record_deadlock("t", key, at, stored)
            c1 = time.process_time()
        com += time.process_time() - c1
        ins += c1 - c0
        rows += len(rows_)
    st.close()
    return ins * 1e6 / rows, com * 1e6 / rows


def fleet(page: int, commits: int) -> float:
    st = fresh(page)
    gauges = {f"gauge_{i}": float(i) for i in range(12)}
    now = time.time()
    c0 = time.process_time()
    for i in range(commits):
        target = f"target-{i % 500:04d}"
        with st.transaction(durable=False):
            st.record_metrics(target, gauges, now + i)
            st.record_cycle(target, now + i, 0.01, "ok", None, 0, 0.0)
    cpu = time.process_time() - c0
    st.close()
    return cpu * 1e6 / commits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--report", choices=sorted(IDS), default="mariadb")
    ap.add_argument("--smoke", action="store_true", help="CI: 2 polls, 100 commits, 1 rep")
    args = ap.parse_args()
    polls, commits = (2, 100) if args.smoke else (40, 4000)
    reps = 1 if args.smoke else args.reps
    batches = stored_rows(args.report, polls)
    pages = (4096, 8192, 16384)
    got: dict[int, list[tuple[float, float, float]]] = {p: [] for p in pages}
    for _ in range(reps):
        for p in pages:  # alternately
            ins, com = tail(p, batches)
            got[p].append((ins, com, fleet(p, commits)))
    print(json.dumps({
        "report": args.report,
        "row_bytes": round(statistics.mean(len(s) for b in batches for _, _, s in b)),
        "reps": reps,
        "by_page_size": {
            str(p): {
                "tail_insert_us_per_row": [round(r[0], 1) for r in v],
                "tail_commit_us_per_row": [round(r[1], 1) for r in v],
                "tail_us_per_row_median": round(statistics.median(r[0] + r[1] for r in v), 1),
                "fleet_cycle_commit_us": [round(r[2], 1) for r in v],
                "fleet_cycle_commit_us_median": round(statistics.median(r[2] for r in v), 1),
            }
            for p, v in got.items()
        },
    }, indent=2))


if __name__ == "__main__":
    main()
