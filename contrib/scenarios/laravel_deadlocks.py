"""The Laravel 5.x database-queue story on MySQL/MariaDB: N `queue:work` processes claim with
`SELECT … ORDER BY id LIMIT 1 FOR UPDATE`, run, and delete each job, while `dbwatch audit` and
`dbwatch deadlocks` watch; counts deadlocks by kind, re-run jobs and jobs left reserved.

    python contrib/scenarios/laravel_deadlocks.py --url mysql://root@127.0.0.1/test \\
        --workers 24 --jobs 3000 --index legacy --delete fetch --out /tmp/lv
    python contrib/scenarios/laravel_deadlocks.py --table /tmp/lv /tmp/lv2 …   # Markdown table
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue as queue_mod
import shlex
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pymysql

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import machine_info
from _laravel import (
    QUEUE,
    DbwatchPoller,
    Ledger,
    WorkerSpec,
    claim_sql,
    create_jobs_table,
    fill_jobs,
    index_name,
    is_ours,
    print_table,
    tally,
    worker_main,
)

import dbwatch
from dbwatch.targets import redact_url, url_parts


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:      # bad input: one line, exit 3 (house rule)
        self.exit(3, f"laravel_deadlocks: {message}\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", nargs="+", metavar="DIR",
                    help="print the Markdown results table of these --out directories and exit")
    ap.add_argument("--url", help="mysql://user:pass@host:port/db (a scratch table is made there)")
    ap.add_argument("--workers", type=int, default=24)
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--index", choices=("legacy", "queue", "none"), default="legacy",
                    help="legacy = (queue, reserved_at) [5.3–5.4], queue = (queue) [5.5+]")
    ap.add_argument("--delete", choices=("fetch", "direct"), default="fetch",
                    help="fetch = SELECT … FOR UPDATE then DELETE (deleteReserved); direct = DELETE")
    ap.add_argument("--claim", choices=("plain", "skip-locked"), default="plain")
    ap.add_argument("--force-index", choices=("off", "index", "primary", "half"), default="off",
                    help="index hint on the claim: the secondary index or PRIMARY on every "
                         "worker, or the secondary index on every other worker (default off: "
                         "the optimizer chooses)")
    ap.add_argument("--out", help="directory for summary.json and the error-log excerpt")
    ap.add_argument("--seconds", type=float, default=60.0, help="time limit (default 60)")
    ap.add_argument("--retry-after", type=int, default=3, help="Laravel retry_after, s (3)")
    ap.add_argument("--sleep", type=float, default=3.0, help="queue:work --sleep, s (3)")
    ap.add_argument("--job-ms", type=float, default=0.0, help="time each job runs, ms (0)")
    ap.add_argument("--poll", type=float, default=5.0, help="dbwatch poll interval, s (5)")
    ap.add_argument("--print-all-deadlocks", action=argparse.BooleanOptionalAction, default=True,
                    help="turn innodb_print_all_deadlocks on for the run and read the error "
                         "log delta (restored after; default on)")
    args = ap.parse_args(argv)
    if args.table:
        return args
    if not args.url or not args.out:
        ap.error("--url and --out are required")
    if args.url.split(":", 1)[0].lower() not in ("mysql", "mariadb"):
        ap.error("--url: expected mysql://… or mariadb://…")
    if min(args.workers, args.jobs, args.retry_after) < 1 or args.seconds <= 0 or args.poll <= 0:
        ap.error("--workers, --jobs, --retry-after, --seconds and --poll must be positive")
    if args.index == "none" and args.force_index in ("index", "half"):
        ap.error("--force-index index|half needs --index legacy or queue")
    return args


def dsn_of(url: str) -> dict[str, Any]:
    base, query = url_parts(url)
    dsn = {k: v for k, v in base.items() if v is not None}
    dsn.setdefault("host", "127.0.0.1")
    dsn.setdefault("user", "root")
    dsn.setdefault("database", "test")
    if "unix_socket" in query:
        dsn["unix_socket"] = query["unix_socket"]
    return dsn


# --- the run ---------------------------------------------------------------------------------

class ScenarioError(Exception):
    """The run cannot go on: one line for the user, exit 3."""


class Scenario:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.dsn = dsn_of(args.url)
        self.table = f"dbw_lv_{uuid.uuid4().hex[:8]}_jobs"
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.admin = pymysql.connect(**self.dsn, autocommit=True)
        self.ledger = Ledger()
        self.notes: list[str] = []
        self.samples: list[dict[str, Any]] = []
        self.plans: list[dict[str, Any]] = []
        self.plans_now: dict[str, dict[str, Any]] = {}
        self.plan_seconds: Counter[str] = Counter()
        self.baseline: dict[tuple[str, str], dict[str, Any]] = {}
        self.old_print: Any = None
        self.log_path: str | None = None
        self.log_offset = self.log_end = 0
        self.counter_before = 0
        self.procs: list[Any] = []
        self.poller: DbwatchPoller | None = None

    def q(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with self.admin.cursor() as cur:
            cur.execute(sql, params)
            return list(cur.fetchall())

    def status(self, name: str) -> int:
        return int(self.q("SHOW GLOBAL STATUS LIKE %s", (name,))[0][1])

    def hints(self) -> tuple[str, ...]:
        ix = index_name(self.table, self.args.index)
        force: dict[str, tuple[str, ...]] = {"off": ("",), "primary": (" FORCE INDEX (PRIMARY)",),
                 "index": (f" FORCE INDEX (`{ix}`)",), "half": ("", f" FORCE INDEX (`{ix}`)")}
        return force[self.args.force_index]

    def setup(self) -> None:
        with self.admin.cursor() as cur:
            create_jobs_table(cur, self.table, self.args.index)
            fill_jobs(cur, self.table, self.args.jobs)
            cur.execute(f"ANALYZE TABLE `{self.table}`")
            cur.fetchall()
        # one audit before the run: MY501 speaks about innodb_print_all_deadlocks as it was
        first = DbwatchPoller(self.args.url, self.table, self.args.poll, time.monotonic() + 0.0)
        first.poll()
        self.baseline = {k: v | {"first_s": "before"} for k, v in first.findings.items()}
        if self.args.print_all_deadlocks:
            self.open_error_log()
        # the counter and the error log cover the same window: from here to the workers' end
        self.counter_before = self.status("Innodb_deadlocks")

    def open_error_log(self) -> None:
        path, datadir, self.old_print = self.q(
            "SELECT @@log_error, @@datadir, @@GLOBAL.innodb_print_all_deadlocks")[0]
        if path and not os.path.isabs(path):
            path = os.path.join(datadir, path)
        if not path or not os.access(path, os.R_OK):
            self.notes.append(f"error log {path or '(stderr)'} not readable here: deadlocks are "
                              "counted by the server counter and the client errors only")
            self.old_print = None
            return
        self.log_path, self.log_offset = path, os.path.getsize(path)
        self.q("SET GLOBAL innodb_print_all_deadlocks = ON")

    def restore(self) -> None:
        # Only ever switch back off: on a shared server "ON" when we started may have been
        # another session's temporary setting, restored by it meanwhile.
        if self.old_print is not None and not int(self.old_print):
            self.q("SET GLOBAL innodb_print_all_deadlocks = OFF")
        self.old_print = None

    def explain(self, t: float, left: int) -> None:
        """The claim's plan now; kept when it changes (the optimizer switches as the table
        drains), with the seconds each plan was in force (per worker hint)."""
        now = int(time.time())
        for hint in dict.fromkeys(self.hints()):
            with self.admin.cursor(pymysql.cursors.DictCursor) as cur:
                cur.execute("EXPLAIN " + claim_sql(self.table, hint, self.args.claim ==
                                                   "skip-locked"),
                            (QUEUE, now, now - self.args.retry_after))
                plan = cur.fetchone() or {}
            row: dict[str, Any] = {"t": t, "jobs_left": left, "hint": hint.strip() or None,
                   "key": plan.get("key"), "type": plan.get("type"), "rows": plan.get("rows"),
                   "extra": plan.get("Extra")}
            last = self.plans_now.get(hint)
            if last is not None:
                self.plan_seconds[last["key"] or "none (full scan)"] += t - last["t_now"]
            row["t_now"] = t
            if last is None or (last["key"], last["type"]) != (row["key"], row["type"]):
                self.plans.append({k: v for k, v in row.items() if k != "t_now"})
            self.plans_now[hint] = row

    def start_workers(self) -> tuple[Any, Any, Any, Any]:
        ctx = mp.get_context("fork")
        events, go, stop = ctx.Queue(), ctx.Event(), ctx.Event()
        idle = ctx.Array("b", self.args.workers, lock=False)
        spec = WorkerSpec(self.dsn, self.table, self.args.delete, self.args.claim == "skip-locked",
                          self.args.retry_after, self.args.sleep, self.args.job_ms, self.hints())
        self.procs = [ctx.Process(target=worker_main, args=(spec, n, events, go, stop, idle),
                                  daemon=True) for n in range(self.args.workers)]
        for p in self.procs:
            p.start()
        while len(self.ledger.threads) < len(self.procs):
            try:
                ev = events.get(timeout=30)
            except queue_mod.Empty:
                raise ScenarioError("the workers did not connect within 30 s") from None
            if ev[0] == "failed":
                raise ScenarioError(f"worker {ev[1]} cannot connect: {ev[2]}")
            self.ledger.add(ev)
        return events, go, stop, idle

    def drain(self, events: Any, wait: float) -> None:
        try:
            self.ledger.add(events.get(timeout=wait))
            while True:
                self.ledger.add(events.get_nowait())
        except queue_mod.Empty:
            pass

    def sample(self, t: float) -> tuple[int, int]:
        left, reserved = self.q(f"SELECT COUNT(*), COALESCE(SUM(`reserved_at` IS NOT NULL), 0)"
                                f" FROM `{self.table}`")[0]
        self.samples.append({"t": t, "left": int(left), "reserved": int(reserved)})
        return int(left), int(reserved)

    def run(self) -> dict[str, Any]:
        events, go, stop, idle = self.start_workers()
        t0 = time.monotonic()
        self.poller = DbwatchPoller(self.args.url, self.table, self.args.poll, t0)
        self.poller.findings = dict(self.baseline)
        go.set()
        self.poller.start()
        first_drain: dict[str, Any] | None = None
        while True:
            t = round(time.monotonic() - t0, 2)
            left, reserved = self.sample(t)
            if left:
                self.explain(t, left)
            if first_drain is None and reserved == left and (left == 0 or all(idle)):
                first_drain = {"t": t, "left_reserved": reserved}
            if left == 0 or t >= self.args.seconds:
                break
            self.drain(events, 0.25)
        elapsed = time.monotonic() - t0
        stop.set()
        self.join_workers(events)
        deadlocks = self.status("Innodb_deadlocks") - self.counter_before
        if self.log_path:
            self.log_end = os.path.getsize(self.log_path)
        self.poller.halt.set()
        self.poller.join(90)
        self.poller.poll()       # once more, after the last deadlock
        left, reserved = self.sample(round(time.monotonic() - t0, 2))
        return {"elapsed_s": round(elapsed, 2), "drained": left == 0, "first_drain": first_drain,
                "left": left, "left_reserved": reserved,
                "deadlocks_counter_delta": deadlocks}

    def join_workers(self, events: Any) -> None:
        deadline = time.monotonic() + 60     # a worker may sit in a lock wait
        while len(self.ledger.finished) < len(self.procs) and time.monotonic() < deadline:
            self.drain(events, 0.25)
        for p in self.procs:
            p.join(5)
            if p.is_alive():
                self.notes.append(f"worker pid {p.pid} did not stop: terminated")
                p.terminate()
        self.drain(events, 0.1)

    def error_log(self) -> dict[str, Any]:
        if not self.log_path:
            return {"read": False, "note": self.notes[-1] if self.notes else "disabled"}
        delta = self.out / "error-log-delta.log"
        with open(self.log_path, "rb") as src, delta.open("wb") as dst:
            src.seek(self.log_offset)
            dst.write(src.read(max(0, self.log_end - self.log_offset)))
        p = subprocess.run([sys.executable, "-m", "dbwatch", "deadlocks", "--error-log",
                            str(delta), "--format", "json"], capture_output=True, text=True,
                           timeout=300, check=False)
        found = json.loads(p.stdout).get("deadlocks", []) if p.returncode == 0 else []
        ours = [dl for dl in found if is_ours(dl, self.table)]
        return {"read": True, "file": str(delta), "command": "dbwatch deadlocks --error-log "
                f"{delta} --format json", "total": len(found), "ours": len(ours), **tally(ours)}

    def teardown(self) -> None:
        for p in self.procs:
            if p.is_alive():
                p.terminate()
        if self.poller is not None:
            self.poller.halt.set()
        try:
            self.restore()
        finally:
            self.q(f"DROP TABLE IF EXISTS `{self.table}`")

    def summary(self, res: dict[str, Any], argv: list[str]) -> dict[str, Any]:
        a, led = self.args, self.ledger.summary()
        log = self.error_log()
        dbw = self.poller.report() if self.poller else {}
        server = self.q("SELECT VERSION(), @@tx_isolation, @@innodb_lock_wait_timeout")[0]
        keys: Counter[str] = Counter({k: round(v, 2) for k, v in self.plan_seconds.items()})
        if not keys and self.plans:     # drained before a second sample
            keys[self.plans[0]["key"] or "none (full scan)"] = 1
        return {
            "scenario": "laravel_deadlocks",
            "command": "python contrib/scenarios/laravel_deadlocks.py " + " ".join(
                shlex.quote(redact_url(x) if x == a.url else x) for x in argv),
            "workers": a.workers, "jobs": a.jobs, "index": a.index, "delete": a.delete,
            "claim": a.claim, "force_index": a.force_index, "retry_after_s": a.retry_after,
            "sleep_s": a.sleep, "job_ms": a.job_ms, "table": self.table,
            "elapsed_s": res["elapsed_s"], "drained": res["drained"],
            "throughput_jobs_per_s": round(led["completed"] / res["elapsed_s"], 1)
            if res["elapsed_s"] else None,
            "first_drain": res["first_drain"],
            "jobs_completed": led["completed"], "executions": led["executions"],
            "executed_more_than_once": led["executed_more_than_once"],
            "left_reserved": res["left_reserved"], "left_total": res["left"],
            "ledger": led,
            "deadlocks": {"total": res["deadlocks_counter_delta"],
                          "source": "Innodb_deadlocks delta (server-wide)",
                          "client_errors": led["client_deadlocks"],
                          "victim_statement_client": led["client_deadlocks_by_statement"],
                          "error_log": log},
            "explain": {"claim_key": keys.most_common(1)[0][0] if keys else None,
                        "seconds_by_key": dict(keys), "changes": self.plans},
            "dbwatch": dbw,
            "queue_samples": self.samples[:: max(1, len(self.samples) // 60)],
            "notes": self.notes,
            "machine": machine_info() | {"server": server[0], "isolation": server[1],
                                         "innodb_lock_wait_timeout": server[2],
                                         "pymysql": pymysql.__version__,
                                         "dbwatch": getattr(dbwatch, "__version__", "?")},
        }


def _interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.table:
        return print_table(args.table)
    try:
        scenario = Scenario(args)
    except pymysql.MySQLError as exc:
        print(f"laravel_deadlocks: cannot connect to {redact_url(args.url)}: {exc.args[-1]}",
              file=sys.stderr)
        return 3
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        scenario.setup()
        res = scenario.run()
    except KeyboardInterrupt:
        print("interrupted: cleaning up", file=sys.stderr)
        return 130
    except (ScenarioError, pymysql.MySQLError) as exc:
        print(f"laravel_deadlocks: {redact_url(args.url)}: {exc.args[-1]}", file=sys.stderr)
        return 3
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        scenario.teardown()
    summary = scenario.summary(res, argv)
    (scenario.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(print_line(summary))
    return 0


def print_line(s: dict[str, Any]) -> str:
    return (f"{s['index']}/{s['delete']}/{s['claim']}: {s['jobs_completed']} jobs in "
            f"{s['elapsed_s']} s ({s['throughput_jobs_per_s']}/s), {s['deadlocks']['client_errors']} "
            f"deadlocks (victim {s['deadlocks']['victim_statement_client']}; server-wide "
            f"{s['deadlocks']['total']}), "
            f"{s['executed_more_than_once']} run more than once, claim key "
            f"{s['explain']['claim_key']}")


if __name__ == "__main__":
    sys.exit(main())
