"""Time from a finding becoming eligible for [terminate] to the kill, daemon at a 5 s interval.

A throwaway PostgreSQL cluster (pgcluster.py), so the daemon's terminate action can touch
nothing else. An app role opens an idle-in-transaction session; it becomes eligible when
its idle age reaches `after`; the kill is seen when its pid leaves pg_stat_activity.
Mode `daemon` runs the real `dbwatch watch` in a subprocess; mode `loop` calls
DaemonTerminator.run from a 5 s loop of its own (probes -> evaluate -> action).

    python contrib/bench/bench_terminate.py --runs 8 --mode daemon
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pgcluster import PgCluster

ROLE = "dbw_bench_app"
CONFIG = """
[[targets]]
name = "bench"
url = "{url}"
interval = "{interval}s"

[rules.PG002]
thresholds = {{ warning = "1s", critical = "1h" }}
for = "0s"

[terminate]
enabled = true
dry_run = false
rules = ["PG002"]
after = "{after}s"
max_per_cycle = 3
"""


def daemon_mode(url: str, interval: float, after: float, tmp: Path) -> subprocess.Popen[bytes]:
    cfg = tmp / "bench.toml"
    cfg.write_text(CONFIG.format(url=url, interval=interval, after=after))
    return subprocess.Popen([sys.executable, "-m", "dbwatch", "watch", "--config", str(cfg),
                             "--state", str(tmp / "state.db")],
                            stdout=subprocess.DEVNULL, stderr=open(tmp / "daemon.log", "wb"))


def loop_mode(url: str, interval: float, after: float, stop: threading.Event) -> None:
    import tomllib

    from dbwatch.actions.daemon_action import DaemonTerminator
    from dbwatch.catalogue import load_catalogue
    from dbwatch.config import parse_config
    from dbwatch.evaluate import Selection
    from dbwatch.pipeline import probe_target
    from dbwatch.targets import spec_for
    catalogue = load_catalogue()
    config = parse_config(tomllib.loads(CONFIG.format(url=url, interval=interval, after=after)),
                          "bench", catalogue)
    spec = spec_for(url, "bench")
    terminator = DaemonTerminator()
    nxt = time.monotonic()
    while not stop.is_set():
        res = probe_target(spec, catalogue, config, Selection(("PG002",)))
        firing = [(f, 0.0) for f in res.evaluation.findings if f.rule == "PG002"]
        terminator.run(spec, config.terminate, firing, None, lambda a: None, res.snapshot)
        nxt += interval
        stop.wait(max(0.0, nxt - time.monotonic()))


def one_run(admin: Any, url: str, after: float, timeout: float) -> float | None:
    """Seconds from eligibility (idle age = after) to the backend's exit."""
    conn = psycopg.connect(url.replace("postgres@", f"{ROLE}@"), application_name="bench")
    conn.execute("SELECT txid_current()")
    pid = conn.info.backend_pid
    row = admin.execute("SELECT extract(epoch FROM state_change) FROM pg_stat_activity "
                        "WHERE pid = %s", (pid,)).fetchone()
    eligible_at = float(row[0]) + after
    deadline = time.time() + after + timeout
    try:
        while time.time() < deadline:
            if admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s",
                             (pid,)).fetchone() is None:
                return time.time() - eligible_at
            time.sleep(0.02)
        return None
    finally:
        conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--interval", type=float, default=5.0)
    ap.add_argument("--after", type=float, default=3.0)
    ap.add_argument("--mode", choices=("daemon", "loop"), default="daemon")
    args = ap.parse_args()
    latencies: list[float] = []
    with PgCluster() as cluster, tempfile.TemporaryDirectory() as tmpdir:
        admin = psycopg.connect(cluster.url, autocommit=True)
        admin.execute(f"CREATE ROLE {ROLE} LOGIN")
        stop = threading.Event()
        proc = None
        if args.mode == "daemon":
            proc = daemon_mode(cluster.url, args.interval, args.after, Path(tmpdir))
        else:
            threading.Thread(target=loop_mode, daemon=True,
                             args=(cluster.url, args.interval, args.after, stop)).start()
        try:
            time.sleep(2.0)
            for _ in range(args.runs):
                time.sleep(random.uniform(0, args.interval))    # a random phase per run
                lat = one_run(admin, cluster.url, args.after, args.interval * 3)
                if lat is None:
                    print("a run timed out: the offender was not killed", file=sys.stderr)
                    return 1
                latencies.append(lat)
        finally:
            stop.set()
            if proc is not None:
                proc.terminate()
                proc.wait(30)
            admin.close()
    out = {"mode": args.mode, "interval": args.interval, "after": args.after,
           "runs": len(latencies), "min": round(min(latencies), 2),
           "median": round(statistics.median(latencies), 2), "max": round(max(latencies), 2),
           "bound": args.interval + 1.0, "within_bound": max(latencies) <= args.interval + 1.0,
           "latencies": [round(x, 2) for x in latencies]}
    print(json.dumps(out, indent=2))
    return 0 if out["within_bound"] else 1


if __name__ == "__main__":
    sys.exit(main())
