"""The PostgreSQL queue story, reproduced: a que_jobs-like table churns while an "analytics"
REPEATABLE READ transaction holds the xmin horizon; claim time climbs and the backlog grows
until the holder ends. With --watchdog, `dbwatch watch` runs beside it and alerts or terminates.

    python contrib/scenarios/mvcc_bloat.py --url postgresql://postgres@127.0.0.1/test \\
        --duration 60 --watchdog terminate --out /tmp/mvcc
Writes DIR/timeline.csv, DIR/summary.json, DIR/timeline.png (when matplotlib is installed).
"""
from __future__ import annotations

import argparse
import csv
import json
import multiprocessing as mp
import queue as queue_mod
import signal
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import WebhookReceiver, machine_info, median, percentile, rounded
from _mvcc_report import plot, summarise
from _queue_load import (
    ANALYTICS_APP,
    PRODUCER_APP,
    WORKER_APP,
    Analytics,
    create_table,
    producer,
    worker,
)
from _watchdog import Watchdog

from dbwatch.durations import parse_duration

SCENARIO_APP = "mvcc-scenario"
FIELDS = ["t", "queue_depth", "n_dead_tup", "lock_ms_median", "lock_ms_p95", "claims",
          "jobs_per_s", "produced_per_s", "oldest_xact_s", "analytics", "vacuums", "dbwatch"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="postgresql://… (the scenario's own database)")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of load (default 60)")
    ap.add_argument("--watchdog", choices=("off", "alert", "terminate"), default="off")
    ap.add_argument("--out", required=True, help="directory for timeline.csv/summary.json/png")
    ap.add_argument("--workers", type=int, default=4, help="worker processes (default 4)")
    ap.add_argument("--rate", type=float, default=400.0, help="jobs/s produced (default 400)")
    ap.add_argument("--threshold", default="20s",
                    help="PG201/PG001/PG002 warning and terminate.after (default 20s)")
    ap.add_argument("--interval", default="2s", help="dbwatch watch interval (default 2s)")
    ap.add_argument("--fill", type=int, default=0, help="jobs already queued at start (0)")
    ap.add_argument("--payload", type=int, default=600, help="bytes of job args (default 600)")
    ap.add_argument("--analytics-at", type=float, default=5.0,
                    help="second at which the analytics transaction opens (default 5)")
    ap.add_argument("--sample", type=float, default=2.0, help="timeline step, s (default 2)")
    ap.add_argument("--vacuum-every", type=float, default=None,
                    help="VACUUM the table every S s (default: 10 when autovacuum is off, "
                         "else never: autovacuum does it)")
    ap.add_argument("--no-plot", action="store_true", help="skip timeline.png")
    args = ap.parse_args(argv)
    try:
        args.threshold_s = parse_duration(args.threshold)
        args.interval_s = parse_duration(args.interval)
    except ValueError as exc:
        ap.error(str(exc))
    if args.duration <= 0 or args.workers < 1 or args.rate <= 0 or args.sample <= 0:
        ap.error("--duration, --workers, --rate and --sample must be positive")
    return args


class Scenario:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = Path(args.out)
        self.table = f"que_jobs_{uuid.uuid4().hex[:8]}"
        self.t0, self.t0_wall = time.monotonic(), time.time()
        self.stop = mp.Event()
        self.inbox: mp.Queue[tuple[str, Any]] = mp.Queue()
        self.procs: list[mp.Process] = []
        self.claims: list[tuple[float, float, int]] = []     # (t, ms, got_job)
        self.produced: list[tuple[float, int]] = []
        self.rows: list[dict[str, Any]] = []
        self.vacuums: list[float] = []
        self.lost: list[dict[str, Any]] = []         # connections cut by someone else
        self.analytics: Analytics | None = None
        self.analytics_at: float | None = None
        self.analytics_gone: float | None = None
        self.watchdog: Watchdog | None = None
        self.hook: WebhookReceiver | None = None
        self.admin = psycopg.connect(args.url, autocommit=True, application_name=SCENARIO_APP)
        self.server_version = self.admin.info.parameter_status("server_version") or "?"
        autovac = self.admin.execute("SHOW autovacuum").fetchone()
        self.autovacuum = bool(autovac and autovac[0] == "on")
        every = args.vacuum_every
        self.vacuum_every = every if every is not None else (0.0 if self.autovacuum else 10.0)
        self.last_vacuum = 0.0

    def now(self) -> float:
        return time.monotonic() - self.t0

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        a = self.args
        self.out.mkdir(parents=True, exist_ok=True)
        create_table(self.admin, self.table, a.fill, a.payload)
        self.t0, self.t0_wall = time.monotonic(), time.time()
        if a.watchdog != "off":
            self.hook = WebhookReceiver(self.t0).__enter__()
        ctx = mp.get_context("fork")
        self.procs.append(ctx.Process(target=producer, name="producer", daemon=True,
                                      args=(a.url, self.table, a.rate, a.payload, self.stop,
                                            self.inbox)))
        for i in range(a.workers):
            self.procs.append(ctx.Process(target=worker, name=f"worker{i}", daemon=True,
                                          args=(a.url, self.table, self.stop, self.inbox)))
        for p in self.procs:
            p.start()

    def run(self) -> None:
        a = self.args
        next_sample, last = a.sample, 0.0
        while self.now() < a.duration:
            self.drain(timeout=0.1)
            if self.analytics is None and self.analytics_at is None and self.now() >= a.analytics_at:
                self.analytics = Analytics(a.url, self.table)
                self.analytics_at = self.now()
                self.start_watchdog(self.analytics.pid)
            if self.vacuum_every and self.now() - self.last_vacuum >= self.vacuum_every:
                self.vacuum()
            if self.now() >= next_sample:
                now = self.now()
                self.sample(last, now)
                last, next_sample = now, next_sample + a.sample

    def start_watchdog(self, pid: int) -> None:
        """Started once the analytics pid is known: the config watches only this run's objects."""
        if self.hook is None:
            return
        self.watchdog = Watchdog(self.args, self.out, self.hook.url, self.admin,
                                 [WORKER_APP, PRODUCER_APP, SCENARIO_APP], pid, self.table)
        self.watchdog.start()

    def drain(self, timeout: float) -> None:
        try:
            kind, data = self.inbox.get(timeout=timeout)
        except queue_mod.Empty:
            return
        while True:
            if kind == "claims":
                self.claims.extend((t - self.t0, ms, got) for t, ms, got in data)
            elif kind == "produced":
                self.produced.append((data[0] - self.t0, data[1]))
            elif kind == "lost":
                who, t, why = data
                self.lost.append({"who": who, "t": round(t - self.t0, 1), "error": why})
                print(f"warning: a {who} lost its connection at {t - self.t0:.1f}s ({why}); "
                      "reconnecting", file=sys.stderr, flush=True)
            try:
                kind, data = self.inbox.get_nowait()
            except queue_mod.Empty:
                return

    def vacuum(self) -> None:
        """Stands in for autovacuum where it is off: without it n_dead_tup never falls."""
        self.admin.execute(sql.SQL("VACUUM {}").format(sql.Identifier(self.table)))
        self.last_vacuum = self.now()
        self.vacuums.append(round(self.last_vacuum, 1))

    def sample(self, since: float, until: float) -> None:
        q = sql.SQL(
            "SELECT (SELECT count(*) FROM {t}),"
            " (SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = %s::regclass),"
            " (SELECT extract(epoch FROM max(clock_timestamp() - xact_start))::float8"
            "    FROM pg_stat_activity WHERE datname = current_database()"
            "    AND pid <> pg_backend_pid() AND backend_type = 'client backend'),"
            " EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = %s)"
        ).format(t=sql.Identifier(self.table))
        pid = self.analytics.pid if self.analytics else -1
        depth, dead, oldest, alive = self.admin.execute(q, (self.table, pid)).fetchone() or (
            None, None, None, False)
        if self.analytics is not None and not alive and self.analytics_gone is None:
            self.analytics_gone = round(until, 1)
        window = [(ms, got) for t, ms, got in self.claims if since <= t < until]
        lock = [ms for ms, _ in window]
        produced = [n for t, n in self.produced if since <= t < until]
        before = [n for t, n in self.produced if t < since]
        made = (produced[-1] - (before[-1] if before else 0)) if produced else 0
        events = [e for e in (self.hook.snapshot() if self.hook else [])
                  if since <= e["t"] < until]
        ours = [e for e in events if self.about_story(e)]
        said = "; ".join(_event_text(e) for e in ours)
        if len(events) > len(ours):
            said += f"{'; ' if said else ''}(+{len(events) - len(ours)} about other objects)"
        span = max(until - since, 1e-6)
        self.rows.append({
            "t": round(until, 1), "queue_depth": depth, "n_dead_tup": dead,
            "lock_ms_median": rounded(median(lock), 3), "lock_ms_p95": rounded(percentile(lock, 95), 3),
            "claims": len(lock), "jobs_per_s": round(sum(g for _, g in window) / span, 1),
            "produced_per_s": round(made / span, 1),
            "oldest_xact_s": rounded(oldest, 1),
            "analytics": "-" if self.analytics is None else ("open" if alive else "gone"),
            "vacuums": sum(1 for v in self.vacuums if since <= v < until), "dbwatch": said})
        row = self.rows[-1]
        print(f"t={row['t']:5.1f}s depth={depth} dead={dead} lock_med={row['lock_ms_median']}ms "
              f"p95={row['lock_ms_p95']}ms jobs/s={row['jobs_per_s']} oldest={row['oldest_xact_s']}s"
              f"{' | ' + said if said else ''}", flush=True)

    def shutdown(self) -> None:
        """End everything this run started, whatever state it is in; the table last."""
        self.stop.set()
        deadline = time.monotonic() + 5.0
        for p in self.procs:
            while p.is_alive() and time.monotonic() < deadline:
                self.drain(timeout=0.05)
                p.join(timeout=0.05)
        for p in self.procs:
            if p.is_alive():
                p.kill()
                p.join(timeout=2.0)
        self.drain(timeout=0.01)
        if self.watchdog is not None:
            self.watchdog.stop()
        if self.hook is not None:
            self.hook.__exit__(None, None, None)
        if self.analytics is not None:
            self.analytics.close()
        try:
            self._drop_table()
        except psycopg.Error as exc:
            print(f"mvcc_bloat: could not drop {self.table} ({str(exc).strip()}); "
                  f"drop it by hand: DROP TABLE {self.table};", file=sys.stderr)
        self.admin.close()

    def _drop_table(self) -> None:
        # Sessions of a killed child may linger a moment server-side; they only hold row locks.
        self.admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
            " AND datname = current_database() AND application_name = ANY(%s)"
            " AND usename = current_user", ([WORKER_APP, PRODUCER_APP, ANALYTICS_APP],))
        self.admin.execute("SET lock_timeout = '10s'")
        self.admin.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(self.table)))

    def about_story(self, e: dict[str, Any]) -> bool:
        """An alert or action about this run's analytics session or queue table (the shared
        server may hold other people's findings)."""
        pid = self.analytics.pid if self.analytics else None
        subject = str(e.get("subject") or "")
        return (pid is not None and (e.get("pid") == pid or subject == f"pid {pid}")) \
            or self.table in subject

    # -- results -------------------------------------------------------------------------

    def write(self) -> dict[str, Any]:
        with (self.out / "timeline.csv").open("w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(self.rows)
        events = self.hook.snapshot() if self.hook else []
        taken = self.watchdog.actions(self.t0_wall) if self.watchdog else []
        if taken:   # the state DB knows when each action happened; the webhook only heard later
            events = [e for e in events if not e.get("action")] + taken
        summary = summarise(self, [e for e in events if self.about_story(e)])
        summary["alerts_about_other_objects"] = sum(1 for e in events if not self.about_story(e))
        summary["machine"] = machine_info() | {"postgresql": self.server_version,
                                               "psycopg": psycopg.__version__}
        (self.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n",
                                               encoding="utf-8")
        note = None if self.args.no_plot else plot(self.rows, summary,
                                                     self.out / "timeline.png")
        if note:
            print(note)
        return summary


def _event_text(e: dict[str, Any]) -> str:
    if e.get("action"):
        return f"{e['action']} pid {e.get('pid')} ({e.get('rule')})"
    return f"{e.get('status')} {e.get('rule')} {e.get('severity')}: {e.get('subject')}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        scenario = Scenario(args)
    except psycopg.Error as exc:
        print(f"mvcc_bloat: cannot connect to --url: {str(exc).strip().splitlines()[0]}",
              file=sys.stderr)
        return 3

    def on_term(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    interrupted, failed = False, None
    try:
        scenario.start()
        scenario.run()
    except KeyboardInterrupt:
        interrupted = True
        print("interrupted: cleaning up", file=sys.stderr)
    except (psycopg.Error, OSError) as exc:
        failed = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # a second Ctrl-C must not skip cleanup
        scenario.shutdown()
    if failed:
        print(f"mvcc_bloat: {failed}", file=sys.stderr)
        return 3
    summary = scenario.write()
    summary_line = {k: summary.get(k) for k in (
        "lock_ms_median_start", "lock_ms_median_end", "backlog_max", "backlog_end",
        "dead_tuples_max", "first_alert_s", "terminated_at_s", "terminations", "recovered_s")}
    print(json.dumps(summary_line))
    print(f"wrote {args.out}/timeline.csv, summary.json")
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
