"""Memory soak: `dbwatch watch` with N targets for M minutes, RSS sampled from /proc.

The daemon runs as a real subprocess (`python -m dbwatch watch`) with its own state DB; the
targets are N names for the local PostgreSQL (and, with --mysql-every K, every K-th one the
local MariaDB). RSS (VmRSS) is sampled every --sample seconds; growth is measured from the
end of the warm-up to the end. Prints one JSON object (and writes it with --out).

    python contrib/bench/bench_soak.py --targets 200 --minutes 30 --interval 15 --out soak.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def threads(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def write_config(path: Path, n: int, interval: float, pg: str, my: str, mysql_every: int) -> None:
    lines = []
    for i in range(n):
        url = my if mysql_every and i % mysql_every == 0 else pg
        lines.append(f'[[targets]]\nname = "soak-{i}"\nurl = "{url}"\ninterval = "{interval:g}s"\n')
    path.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--targets", type=int, default=200)
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--interval", type=float, default=15.0)
    ap.add_argument("--warmup", type=float, default=5.0, help="minutes not counted in growth")
    ap.add_argument("--sample", type=float, default=15.0, help="seconds between RSS samples")
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("--my", default="mysql://root@127.0.0.1:3306/test")
    ap.add_argument("--mysql-every", type=int, default=5, help="every K-th target MariaDB (0: none)")
    ap.add_argument("--env", action="append", default=[], help="KEY=VALUE for the daemon")
    ap.add_argument("--out", help="write the JSON result here too")
    ap.add_argument("--analyse", metavar="JSON", help="only recompute the figures of a saved run")
    args = ap.parse_args(argv)
    if args.analyse:
        saved = json.loads(Path(args.analyse).read_text())
        saved.update(figures(saved["samples"], saved["warmup_minutes"]))
        print(json.dumps({k: v for k, v in saved.items() if k not in ("samples", "log_tail")}, indent=1))
        return 0

    with tempfile.TemporaryDirectory(prefix="dbwatch-soak-") as tmp:
        cfg, state, log = Path(tmp, "soak.toml"), Path(tmp, "state.db"), Path(tmp, "daemon.log")
        write_config(cfg, args.targets, args.interval, args.pg, args.my, args.mysql_every)
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env.update(kv.split("=", 1) for kv in args.env)
        cmd = [sys.executable, "-m", "dbwatch", "watch", "--config", str(cfg), "--state", str(state)]
        with log.open("w") as logf:
            proc = subprocess.Popen(cmd, env=env, stdout=logf, stderr=subprocess.STDOUT)
        samples: list[dict[str, Any]] = []
        t0 = time.time()
        try:
            while time.time() - t0 < args.minutes * 60 and proc.poll() is None:
                time.sleep(args.sample)
                r = rss_mib(proc.pid)
                if r is not None:
                    samples.append(
                        {"t": round(time.time() - t0, 1), "rss_mib": round(r, 2),
                         "threads": threads(proc.pid)}
                    )
                    print(json.dumps(samples[-1]), file=sys.stderr, flush=True)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
        tail = log.read_text(errors="replace").splitlines()[-20:]
        cycles = _cycles(state)
    after = [s for s in samples if s["t"] >= args.warmup * 60]
    result: dict[str, Any] = {
        "bench": "soak",
        "targets": args.targets,
        "interval": args.interval,
        "minutes": args.minutes,
        "warmup_minutes": args.warmup,
        "env": args.env,
        "exit_code": proc.returncode,
        "rss_start_mib": samples[0]["rss_mib"] if samples else None,
        "rss_after_warmup_mib": after[0]["rss_mib"] if after else None,
        "rss_end_mib": samples[-1]["rss_mib"] if samples else None,
        "rss_max_after_warmup_mib": max((s["rss_mib"] for s in after), default=None),
        "growth_after_warmup_mib": round(after[-1]["rss_mib"] - after[0]["rss_mib"], 2)
        if len(after) > 1
        else None,
        "targets_with_cycles": cycles,
        **figures(samples, args.warmup),
        "samples": samples,
        "log_tail": tail,
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


def figures(samples: list[dict[str, Any]], warmup_minutes: float) -> dict[str, Any]:
    """Growth after warm-up, robust to the saw-tooth of the periodic trim: the median of the
    last 5 minutes minus the median of the first 5 minutes after warm-up, and the slope of a
    least-squares line through every sample after warm-up (MiB per minute)."""
    after = [s for s in samples if s["t"] >= warmup_minutes * 60]
    if len(after) < 4:
        return {}
    t_first, t_last = after[0]["t"], after[-1]["t"]
    head = [s["rss_mib"] for s in after if s["t"] < t_first + 300]
    tail = [s["rss_mib"] for s in after if s["t"] > t_last - 300]
    xs = [s["t"] / 60 for s in after]
    ys = [s["rss_mib"] for s in after]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs) or 1.0
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var
    return {
        "median_first_5min_after_warmup_mib": round(statistics.median(head), 2),
        "median_last_5min_mib": round(statistics.median(tail), 2),
        "growth_median_mib": round(statistics.median(tail) - statistics.median(head), 2),
        "slope_mib_per_min": round(slope, 3),
        "min_after_warmup_mib": min(ys),
        "max_after_warmup_mib": max(ys),
    }


def _cycles(state: Path) -> int:
    import sqlite3

    try:
        with sqlite3.connect(state) as db:
            return int(db.execute("SELECT count(*) FROM cycles WHERE status = 'ok'").fetchone()[0])
    except sqlite3.Error:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
