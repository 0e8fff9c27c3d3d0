"""The Laravel 5.x database-queue worker, as real processes on PyMySQL (the jobs table, the
claim/reserve/delete statements, one `queue:work` loop per process), the ledger of executions
per job, and `dbwatch audit`/`deadlocks` polled beside the workers; the results table.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import pymysql

from dbwatch.deadlocks.diagnosis import query_kind

DEADLOCK = 1213
LOCK_WAIT_TIMEOUT = 1205
CONNECTION_LOST = (2006, 2013)
RULES = "MY102,QU301,MY501"
QUEUE = "default"
INDEXES = {"legacy": ("queue_reserved_at_index", "(`queue`, `reserved_at`)"),
           "queue": ("queue_index", "(`queue`)")}


def index_name(table: str, index: str) -> str | None:
    return f"{table}_{INDEXES[index][0]}" if index in INDEXES else None


def create_jobs_table(cur: Any, table: str, index: str) -> None:
    """Laravel 5.x's jobs migration; the secondary index as 5.3–5.4 (legacy) or 5.5+ (queue)."""
    cur.execute(f"""CREATE TABLE `{table}` (
        `id` BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
        `queue` VARCHAR(255) NOT NULL, `payload` LONGTEXT NOT NULL,
        `attempts` TINYINT UNSIGNED NOT NULL, `reserved_at` INT UNSIGNED NULL,
        `available_at` INT UNSIGNED NOT NULL, `created_at` INT UNSIGNED NOT NULL
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4""")
    if index in INDEXES:
        cur.execute(f"CREATE INDEX `{index_name(table, index)}` ON `{table}` {INDEXES[index][1]}")


def fill_jobs(cur: Any, table: str, jobs: int) -> None:
    """`jobs` queued jobs with payloads shaped like Laravel's (~400 bytes of JSON)."""
    now = int(time.time()) - 1
    rows = []
    for i in range(jobs):
        payload = json.dumps({
            "displayName": "App\\Jobs\\SendReminder", "job": "Illuminate\\Queue\\CallQueuedHandler@call",
            "maxTries": None, "timeout": None, "data": {
                "commandName": "App\\Jobs\\SendReminder",
                "command": f'O:21:"App\\Jobs\\SendReminder":1:{{s:6:"userId";i:{i};}}' + "x" * 160}})
        rows.append((QUEUE, payload, 0, None, now, now))
    for start in range(0, len(rows), 1000):
        cur.executemany(f"INSERT INTO `{table}` (`queue`, `payload`, `attempts`, `reserved_at`,"
                        " `available_at`, `created_at`) VALUES (%s,%s,%s,%s,%s,%s)",
                        rows[start:start + 1000])


def claim_sql(table: str, hint: str = "", skip_locked: bool = False) -> str:
    lock = "FOR UPDATE SKIP LOCKED" if skip_locked else "FOR UPDATE"
    return (f"SELECT * FROM `{table}`{hint} WHERE `queue` = %s AND ((`reserved_at` IS NULL AND"
            f" `available_at` <= %s) OR (`reserved_at` <= %s)) ORDER BY `id` ASC LIMIT 1 {lock}")


@dataclass(frozen=True)
class WorkerSpec:
    dsn: dict[str, Any]
    table: str
    delete: str            # fetch | direct
    skip_locked: bool
    retry_after: int
    sleep: float           # Laravel's --sleep: after an empty (or failed) poll
    job_ms: float          # how long "running" a job takes
    hints: tuple[str, ...] = ("",)   # index hint per worker, cycled

    def hint(self, n: int) -> str:
        return self.hints[n % len(self.hints)]


def worker_main(spec: WorkerSpec, n: int, events: Any, go: Any, stop: Any, idle: Any) -> None:
    """One `php artisan queue:work` process. Every step goes to `events` as a tuple."""
    try:
        conn = pymysql.connect(**spec.dsn, autocommit=False)
    except pymysql.MySQLError as exc:
        events.put(("failed", n, str(exc.args[-1])[:200]))
        return
    try:
        cur = conn.cursor()
        cur.execute("SELECT CONNECTION_ID()")
        events.put(("hello", n, cur.fetchone()[0], os.getpid()))
        conn.commit()
        go.wait()
        Worker(spec, n, conn, events, idle).loop(stop)
    finally:
        conn.close()
        events.put(("bye", n))


class Worker:
    def __init__(self, spec: WorkerSpec, n: int, conn: Any, events: Any, idle: Any) -> None:
        self.spec, self.n, self.conn, self.events, self.idle = spec, n, conn, events, idle
        self.cur = conn.cursor()
        self.claim = claim_sql(spec.table, spec.hint(n), spec.skip_locked)
        self.lost = False

    def loop(self, stop: Any) -> None:
        while not stop.is_set() and not self.lost:
            job = self.pop()
            if job is None:
                # Laravel 5.x Worker::getNextJob reports a failed pop and returns null; the
                # daemon then sleeps --sleep seconds, as it does on an empty queue.
                self.idle[self.n] = 1
                stop.wait(self.spec.sleep)
                continue
            self.idle[self.n] = 0
            job_id, attempts, reserved_at = job
            self.events.put(("exec", self.n, job_id, attempts, reserved_at, time.time()))
            if self.spec.job_ms:
                time.sleep(self.spec.job_ms / 1000.0)
            self.delete_reserved(job_id)

    def _failed(self, stage: str, exc: pymysql.MySQLError, job_id: int | None) -> None:
        errno = exc.args[0] if exc.args and isinstance(exc.args[0], int) else -1
        try:
            self.conn.rollback()
        except pymysql.MySQLError:
            self.lost = True
        self.lost = self.lost or errno in CONNECTION_LOST
        self.events.put(("error", self.n, stage, errno, job_id, time.time()))

    def pop(self) -> tuple[int, int, int] | None:
        """DatabaseQueue::pop: claim the oldest available job and reserve it, in one transaction."""
        now, stage = int(time.time()), "claim"
        try:
            self.cur.execute(self.claim, (QUEUE, now, now - self.spec.retry_after))
            row = self.cur.fetchone()
            if row is None:
                self.conn.commit()
                return None
            stage = "update"
            self.cur.execute(f"UPDATE `{self.spec.table}` SET `reserved_at` = %s,"
                             " `attempts` = `attempts` + 1 WHERE `id` = %s", (now, row[0]))
            self.conn.commit()
            return int(row[0]), int(row[3]) + 1, now
        except pymysql.MySQLError as exc:
            self._failed(stage, exc, None if stage == "claim" else int(row[0]))
            return None

    def delete_reserved(self, job_id: int) -> None:
        """DatabaseQueue::deleteReserved (fetch) or a single DELETE (direct). On error the
        exception propagates as in Laravel 5.x: the delete is lost, the job stays reserved."""
        stage = "fetch" if self.spec.delete == "fetch" else "delete"
        try:
            if stage == "fetch":
                self.cur.execute(f"SELECT * FROM `{self.spec.table}` WHERE `id` = %s LIMIT 1"
                                 " FOR UPDATE", (job_id,))
                self.cur.fetchall()
                stage = "delete"
            self.cur.execute(f"DELETE FROM `{self.spec.table}` WHERE `id` = %s", (job_id,))
            deleted = self.cur.rowcount
            self.conn.commit()
            self.events.put(("deleted", self.n, job_id, deleted, time.time()))
        except pymysql.MySQLError as exc:
            self._failed(stage, exc, job_id)


# --- the ledger -----------------------------------------------------------------------------

@dataclass
class Execution:
    worker: int
    reserved_at: int
    t: float
    outcome: str | None = None      # deleted | already-gone | rolled-back:<stage>:<errno>
    outcome_t: float | None = None


@dataclass
class Ledger:
    execs: dict[int, list[Execution]] = field(default_factory=dict)
    errors: list[tuple[int, str, int, int | None, float]] = field(default_factory=list)
    threads: dict[int, int] = field(default_factory=dict)
    finished: set[int] = field(default_factory=set)

    def add(self, ev: tuple[Any, ...]) -> None:
        kind = ev[0]
        if kind == "hello":
            self.threads[ev[1]] = ev[2]
        elif kind == "bye":
            self.finished.add(ev[1])
        elif kind == "exec":
            _, n, job, _attempts, reserved_at, t = ev
            self.execs.setdefault(job, []).append(Execution(n, reserved_at, t))
        elif kind == "deleted":
            _, n, job, rows, t = ev
            self._settle(n, job, "deleted" if rows else "already-gone", t)
        elif kind == "error":
            _, n, stage, errno, job, t = ev
            self.errors.append((n, stage, errno, job, t))
            if stage in ("fetch", "delete") and job is not None:
                self._settle(n, job, f"rolled-back:{stage}:{errno}", t)

    def _settle(self, n: int, job: int, outcome: str, t: float) -> None:
        for ex in reversed(self.execs.get(job, [])):
            if ex.worker == n and ex.outcome is None:
                ex.outcome, ex.outcome_t = outcome, t
                return

    def rerun_causes(self) -> Counter[str]:
        """Why each second or later execution happened: the previous one's delete was rolled
        back, or its reservation expired (retry_after) before its delete committed."""
        causes: Counter[str] = Counter()
        for runs in self.execs.values():
            for prev, cur in pairwise(runs):
                if prev.outcome and prev.outcome.startswith("rolled-back"):
                    causes["after_delete_rolled_back"] += 1
                elif prev.outcome_t is None or prev.outcome_t > cur.t:
                    causes["after_expiry"] += 1
                else:
                    causes["unexplained"] += 1
        return causes

    def summary(self) -> dict[str, Any]:
        runs = Counter(len(v) for v in self.execs.values())
        rolled = {j for j, v in self.execs.items()
                  if any(e.outcome and e.outcome.startswith("rolled-back") for e in v)}
        rerun = {j for j, v in self.execs.items() if len(v) > 1}
        deadlocks = Counter(stage for _n, stage, errno, _j, _t in self.errors if errno == DEADLOCK)
        return {
            "executed": len(self.execs),
            "executions": sum(len(v) for v in self.execs.values()),
            "completed": sum(1 for v in self.execs.values()
                             if any(e.outcome == "deleted" for e in v)),
            "executed_more_than_once": len(rerun),
            "executions_histogram": {str(k): runs[k] for k in sorted(runs)},
            "delete_rolled_back": len(rolled),
            "rerun_and_rolled_back": len(rerun & rolled),
            "rerun_causes": dict(self.rerun_causes()),
            "client_deadlocks": sum(deadlocks.values()),
            "client_deadlocks_by_statement": {s: deadlocks[s] for s in
                                              ("claim", "update", "fetch", "delete")},
            "other_errors": dict(Counter(f"{stage}:{errno}" for _n, stage, errno, _j, _t
                                         in self.errors if errno != DEADLOCK)),
        }


# --- dbwatch beside the workers -------------------------------------------------------------

class DbwatchPoller(threading.Thread):
    """Runs `dbwatch audit` and `dbwatch deadlocks` every few seconds as a user would."""

    def __init__(self, url: str, table: str, every: float, t0: float) -> None:
        super().__init__(name="dbwatch-poller", daemon=True)
        self.url, self.table, self.every, self.t0 = url, table, every, t0
        self.halt = threading.Event()
        self.findings: dict[tuple[str, str], dict[str, Any]] = {}
        self.deadlocks: dict[str, dict[str, Any]] = {}
        self.runs: Counter[str] = Counter()
        self.failures: list[str] = []

    def dbwatch(self, *args: str) -> dict[str, Any] | None:
        cmd = [sys.executable, "-m", "dbwatch", *args, "--format", "json"]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        except subprocess.TimeoutExpired:
            self.failures.append(f"{args[0]}: timed out after 60 s")
            return None
        try:
            doc: dict[str, Any] = json.loads(p.stdout)
            return doc
        except ValueError:
            said = (p.stderr.strip().splitlines() or ["no output"])[-1][:200]
            self.failures.append(f"{args[0]}: exit {p.returncode}: {said}")
            return None

    def poll(self) -> None:
        t = round(time.monotonic() - self.t0, 1)
        self.runs["audit"] += 1
        for f in (self.dbwatch("audit", self.url, "--select", RULES) or {}).get("findings", []):
            key = (f.get("rule"), f.get("subject"))
            self.findings.setdefault(key, {"rule": key[0], "subject": key[1], "first_s": t,
                                           "summary": (f.get("summary") or "")[:240]})
            self.findings[key]["last_s"] = t
        self.runs["deadlocks"] += 1
        for dl in (self.dbwatch("deadlocks", self.url) or {}).get("deadlocks", []):
            if is_ours(dl, self.table):
                self.deadlocks.setdefault(dl.get("key") or dl.get("at"), dl | {"seen_s": t})

    def run(self) -> None:
        # start to start: a poll itself takes seconds on a loaded machine
        while not self.halt.wait(max(0.0, self.every - (time.monotonic() - self.t0) % self.every)):
            self.poll()

    def report(self) -> dict[str, Any]:
        found = sorted(self.findings.values(), key=lambda f: (f["rule"], f["subject"]))
        return {
            "audit": {"command": f"dbwatch audit URL --select {RULES} --format json",
                      "runs": self.runs["audit"], "findings": found,
                      "about_this_table": [f"{f['rule']} {f['subject']}" for f in found
                                           if self.table in f["subject"]
                                           or (f["rule"] == "MY102" and self.table in f["summary"])]},
            "deadlocks": {"command": "dbwatch deadlocks URL --format json",
                          "runs": self.runs["deadlocks"], "distinct_seen": len(self.deadlocks),
                          **tally(list(self.deadlocks.values()))},
            "failures": self.failures,
        }


def is_ours(dl: dict[str, Any], table: str) -> bool:
    return any(tb.endswith("." + table) or tb == table
               for t in dl.get("transactions", []) for tb in t.get("tables", []))


def tally(deadlocks: list[dict[str, Any]]) -> dict[str, Any]:
    """Diagnosis patterns, rules, and which statement the victim was running."""
    patterns: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    victims: Counter[str] = Counter()
    indexes: Counter[str] = Counter()
    for dl in deadlocks:
        diag = dl.get("diagnosis") or {}
        patterns[diag.get("pattern", "?")] += 1
        rules.update(diag.get("rules") or [])
        victim = next((t for t in dl.get("transactions", []) if t.get("victim")), None)
        tables = {tb.rsplit(".", 1)[-1].lower() for t in dl.get("transactions", [])
                  for tb in t.get("tables", [])}
        kind = query_kind(victim.get("query"), tables) if victim else "unknown"
        victims[{"reserve": "update"}.get(kind, kind)] += 1
        names = sorted({lk.get("index") or "?" for lk in dl.get("locks", [])})
        indexes[" + ".join(n.rsplit("_jobs_", 1)[-1] for n in names)] += 1
    return {"by_pattern": dict(patterns), "rules": dict(rules), "victim_statement": dict(victims),
            "lock_indexes": dict(indexes)}


# --- the results table ---------------------------------------------------------------------

COLUMNS = ("index", "delete", "claim", "claim plan (EXPLAIN, share of time)", "workers", "jobs", "runs",
           "s", "jobs/s", "deadlocks", "victim claim/update/fetch/delete", "diagnosis (error log)",
           "jobs run >1×", "stuck at first drain", "dbwatch audit on the table")


def _spread(values: list[Any]) -> str:
    """One value, or the median with the range: runs of one configuration vary."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return "–"
    if vals[0] == vals[-1]:
        return f"{vals[0]:g}"
    return f"{statistics.median(vals):g} ({vals[0]:g}–{vals[-1]:g})"


def table_row(runs: list[dict[str, Any]]) -> list[str]:
    """One configuration: medians over its runs; plans, victims and diagnoses summed."""
    s = runs[0]
    keys: Counter[str] = Counter()
    victims: Counter[str] = Counter()
    diag: Counter[str] = Counter()
    rules: set[str] = set()
    for r in runs:
        for key, secs in r["explain"]["seconds_by_key"].items():
            keys[key.rsplit("_jobs_", 1)[-1]] += secs
        victims.update(r["deadlocks"]["victim_statement_client"])
        log = r["deadlocks"]["error_log"]
        diag.update(log.get("by_pattern") if log.get("read") else
                    r["dbwatch"]["deadlocks"]["by_pattern"])
        rules.update(x.split()[0] for x in r["dbwatch"]["audit"]["about_this_table"])
    total = sum(keys.values()) or 1
    plan = ", ".join(f"{k} {round(100 * n / total)} %" for k, n in keys.most_common())
    if s["force_index"] != "off":
        plan += f" (FORCE INDEX: {s['force_index']})"
    return [s["index"], s["delete"], s["claim"], plan, str(s["workers"]), str(s["jobs"]),
            str(len(runs)), _spread([r["elapsed_s"] for r in runs]),
            _spread([r["throughput_jobs_per_s"] for r in runs]),
            _spread([r["deadlocks"]["client_errors"] for r in runs]),
            "/".join(str(victims.get(k, 0)) for k in ("claim", "update", "fetch", "delete")),
            ", ".join(f"{k} {n}" for k, n in sorted(diag.items())) or "–",
            _spread([r["executed_more_than_once"] for r in runs]),
            _spread([(r.get("first_drain") or {}).get("left_reserved") for r in runs]),
            ", ".join(sorted(rules)) or "–"]


def print_table(dirs: list[str]) -> int:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for d in dirs:
        try:
            s = json.loads((Path(d) / "summary.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"laravel_deadlocks: {d}/summary.json: {exc}", file=sys.stderr)
            return 3
        key = (s["index"], s["delete"], s["claim"], s["force_index"], s["workers"], s["jobs"])
        groups.setdefault(key, []).append(s)
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for runs in groups.values():
        print("| " + " | ".join(table_row(runs)) + " |")
    return 0
