"""Differential check of the InnoDB deadlock parsing between two checkouts: every deadlock record
(dbwatch.deadlocks.record) found in every file under tests/fixtures and the corpus' files holding a report,
through the line path, the byte path and the log tailer's _scan (whole and in small reads).

Run: python contrib/bench/diff_deadlock_parse.py /work/main .   (prints differences; exit 1 if any)
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import hashlib, io, json, sys
from pathlib import Path
root = Path(sys.argv[1]); sys.path[:0] = [str(root), str(root / "contrib" / "bench")]
from dbwatch.deadlocks import tailer
from dbwatch.deadlocks.record import deadlock_record
from dbwatch.parsers.errorlog import iter_deadlocks, iter_deadlocks_bytes
import bench_parsers
files = [Path(p) for p in sys.argv[2:]]
out = {}
def recs(dls):
    rs = [deadlock_record(d) for d in dls]  # a typed record (to_json) from issue 25.3 on
    return json.dumps([getattr(r, "to_json", lambda r=r: r)() for r in rs], sort_keys=True, default=str)
def tail(data, step):
    found, off, end = [], 0, 0
    while end < len(data):
        end += step
        more, off = tailer._scan(io.BytesIO(data[:end]), off, "mysql", False)
        found += more
    return found + tailer._scan(io.BytesIO(data), off, "mysql", True)[0]
inputs = [(str(p), p.read_bytes()) for p in files]
inputs.append(("bench_parsers.error_log(300)", ("\n".join(bench_parsers.error_log(300)) + "\n").encode()))
for name, data in inputs:
    text = data.decode("utf-8", "replace")
    out[name + " lines"] = recs(iter_deadlocks(text.splitlines(keepends=True)))
    out[name + " bytes"] = recs(iter_deadlocks_bytes(iter([data[i:i+65536] for i in range(0, len(data), 65536)])))
    out[name + " scan"] = recs(tailer._scan(io.BytesIO(data), 0, "mysql", True)[0])
    out[name + " tail-4k"] = recs(tail(data, 4096))
print(json.dumps(out))
"""


def run(root: str, files: list[str]) -> dict[str, str]:
    res = subprocess.run(
        [sys.executable, "-c", CHILD, root, *files], capture_output=True, text=True, check=True
    )
    return dict(json.loads(res.stdout))


def main() -> None:
    a, b = sys.argv[1], sys.argv[2]
    here = Path(b).resolve()
    files = sorted(str(p) for p in (here / "tests" / "fixtures").rglob("*") if p.is_file())
    corpus = here.parent / "shared"
    if corpus.is_dir():
        files += sorted(
            str(p) for p in corpus.rglob("*") if p.is_file() and b"WE ROLL BACK" in p.read_bytes()
        )
    ra, rb = run(a, files), run(b, files)
    bad = [k for k in ra if ra[k] != rb.get(k)]
    n = sum(len(json.loads(v)) for v in ra.values())
    digest = hashlib.sha256(json.dumps(ra, sort_keys=True).encode()).hexdigest()[:16]
    print(json.dumps({"inputs": len(ra), "records": n, "differ": bad, "digest_a": digest}))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
