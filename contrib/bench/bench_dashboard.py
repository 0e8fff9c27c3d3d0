"""What the dashboard costs the daemon: CPU per request and page size, on a state DB holding
1,000 firing findings and 10,000 deadlocks (plus 6 h of history and 500 actions).

The server runs in its own process (as inside `dbwatch watch`); CPU is that process's
user+system time over N requests of each page, read from /proc.

Run: python contrib/bench/bench_dashboard.py [--findings 1000] [--deadlocks 10000] [--requests 20]
     (prints one JSON object)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from web_fixtures import fill, sample_deadlocks  # noqa: E402  (tests/web_fixtures.py: via State)

SERVER = """
import sys, time
sys.path.insert(0, {root!r})
from dbwatch.web.server import Dashboard, serve
srv = serve("127.0.0.1:0", Dashboard({state!r}))
print(srv.server_address[1], flush=True)
time.sleep(3600)
"""
TABLE = sample_deadlocks()[0]["locks"][0]["table"]  # one in four of the deadlocks touch it
PAGES = ("/", "/?page=5", "/deadlocks", "/deadlocks?pattern=queue-claim-vs-delete",
         f"/deadlocks?table={TABLE}&page=10", "/history?since=6h", "/history?since=7d", "/actions")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--findings", type=int, default=1000)
    ap.add_argument("--deadlocks", type=int, default=10000)
    ap.add_argument("--requests", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state.db"
        t0 = time.perf_counter()
        fill(state, findings=args.findings, deadlocks=args.deadlocks, actions=500, hours=6,
             points=720, payload="")
        fill_s = time.perf_counter() - t0
        proc = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT), state=str(state))],
                                stdout=subprocess.PIPE, text=True)
        try:
            port = int(proc.stdout.readline())  # type: ignore[union-attr]
            base = f"http://127.0.0.1:{port}"
            pages = {}
            for page in PAGES:
                urllib.request.urlopen(base + page).read()  # warm (templates compiled)
                before = cpu_seconds(proc.pid)
                walls, size = [], 0
                for _ in range(args.requests):
                    t = time.perf_counter()
                    size = len(urllib.request.urlopen(base + page).read())
                    walls.append(time.perf_counter() - t)
                cpu = (cpu_seconds(proc.pid) - before) / args.requests
                pages[page] = {"cpu_ms_per_request": round(cpu * 1000, 1),
                               "wall_ms_median": round(statistics.median(walls) * 1000, 1),
                               "bytes": size}
        finally:
            proc.kill()
            proc.wait()
        doc = {"findings": args.findings, "deadlocks": args.deadlocks, "requests": args.requests,
               "state_mb": round(state.stat().st_size / 1e6, 1), "fill_seconds": round(fill_s, 1),
               "pages": pages, "loadavg": os.getloadavg()[0]}
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
