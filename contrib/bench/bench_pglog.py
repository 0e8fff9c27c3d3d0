"""Benchmark the PostgreSQL log readers: deadlocks from stderr / csvlog / jsonlog logs, and the
query-log reader on a log_statement = 'all' stderr log, in MB/s of log text (per CPU second).

Run: python contrib/bench/bench_pglog.py [--root CHECKOUT] [--mb 40] [--repeat 3]
(--root: measure another checkout's code, e.g. the main branch, for a before/after.)
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path


def stderr_log(mb: float, every: int) -> list[str]:
    """Debian's prefix; one deadlock (2 processes, multi-line statements) every `every`
    messages, the rest log_statement lines and checkpoints."""
    out: list[str] = []
    size, i = 0, 0
    while size < mb * 1e6:
        i += 1
        p = 1000 + i % 5000
        pre = f"2024-03-03 10:{i // 60 % 60:02d}:{i % 60:02d}.123 UTC [{p}] app@shop "
        if i % every == 0:
            lines = [
                pre + "ERROR:  deadlock detected",
                pre + f"DETAIL:  Process {p} waits for ShareLock on transaction {i + 1}; "
                f"blocked by process {p + 1}.",
                f"\tProcess {p + 1} waits for ShareLock on transaction {i}; blocked by process {p}.",
                f"\tProcess {p}: UPDATE jobs SET state = 'done'\n\t  WHERE id = {i}",
                f"\tProcess {p + 1}: SELECT * FROM jobs WHERE queue = 'default' ORDER BY id "
                "LIMIT 2 FOR UPDATE",
                pre + "HINT:  See server log for query details.",
                pre + 'CONTEXT:  while updating tuple (0,1) in relation "jobs"',
                pre + f"STATEMENT:  UPDATE jobs SET state = 'done'\n\t  WHERE id = {i}",
            ]
        elif i % 7 == 0:
            lines = [pre + "LOG:  checkpoint starting: time"]
        else:
            lines = [
                pre + f"LOG:  statement: SELECT id, payload FROM jobs WHERE queue = 'q{i % 9}'",
                f"\t  AND state = 'ready' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED",
            ]
        for ln in lines:
            out.extend(ln.split("\n"))
            size += len(ln) + 1
    return out


def csvlog(lines: list[str]) -> list[str]:
    """The same messages as csvlog rows (23+3 columns)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    rec: list[str] | None = None
    for ln in lines:
        if ln.startswith("\t"):
            if rec is not None:
                rec[14 if rec[11] == "ERROR" else 13] += "\n" + ln[1:]
            continue
        head, _, msg = ln.partition("] app@shop ")
        sev, _, text = msg.partition(":  ")
        if sev in ("DETAIL", "HINT", "CONTEXT", "STATEMENT") and rec is not None:
            rec[{"DETAIL": 14, "HINT": 15, "CONTEXT": 18, "STATEMENT": 19}[sev]] = text
            continue
        if rec is not None:
            w.writerow(rec)
        ts, pid = head[:27], head.rsplit("[", 1)[1]
        rec = [ts, "app", "shop", pid, "", "", "1", "", "", "", "0", sev, "40P01" if
               sev == "ERROR" else "00000", text] + [""] * 9 + ["client backend", "", "0"]  # fmt: skip
    if rec is not None:
        w.writerow(rec)
    return buf.getvalue().splitlines(keepends=True)


def jsonlog(csv_lines: list[str]) -> list[str]:
    keys = {"timestamp": 0, "user": 1, "dbname": 2, "pid": 3, "error_severity": 11,
            "state_code": 12, "message": 13, "detail": 14, "hint": 15, "context": 18,
            "statement": 19}  # fmt: skip
    out = []
    for row in csv.reader(csv_lines):
        out.append(json.dumps({k: row[i] for k, i in keys.items() if row[i]}) + "\n")
    return out


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t = time.process_time()  # CPU time: the machine is shared, wall time is noise
        result = fn()
        times.append(time.process_time() - t)
    return statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[2]))
    ap.add_argument("--mb", type=float, default=40.0)
    ap.add_argument("--every", type=int, default=50, help="one deadlock every N messages")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, args.root)
    from dbwatch.parsers.pg_deadlock import iter_pg_deadlocks
    from dbwatch.sqlpatterns.logs.postgres import read_stderr

    class Null:
        n = 0

        def statement(self, *a: object, **k: object) -> None:
            self.n += 1

        def connect(self, *a: object) -> None: ...
        def disconnect(self, *a: object) -> None: ...
        def version(self, *a: object) -> None: ...
        def unreadable(self, *a: object) -> None: ...

    stderr = stderr_log(args.mb, args.every)
    csvl = csvlog(stderr)
    jsonl = jsonlog(csvl)
    out: dict[str, object] = {"root": args.root, "python": sys.version.split()[0]}
    for name, lines in (("stderr", stderr), ("csvlog", csvl), ("jsonlog", jsonl)):
        mb = sum(len(x) + (0 if x.endswith("\n") else 1) for x in lines) / 1e6
        secs, got = timed(lambda lines=lines: sum(1 for _ in iter_pg_deadlocks(lines)),
                          args.repeat)  # fmt: skip
        out[f"deadlocks_{name}"] = {"mb": round(mb, 1), "seconds": round(secs, 3),
                                    "mb_per_s": round(mb / secs, 1), "deadlocks": got}  # fmt: skip

    def query_log() -> int:
        sink = Null()
        read_stderr(iter(stderr), sink)
        return sink.n

    mb = sum(len(x) + 1 for x in stderr) / 1e6
    secs, got = timed(query_log, args.repeat)
    out["querylog_stderr"] = {"mb": round(mb, 1), "seconds": round(secs, 3),
                              "mb_per_s": round(mb / secs, 1), "statements": got}  # fmt: skip
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
