"""Fills a daemon state DB (through dbwatch.daemon.state.State, as the daemon writes it) with
findings, deadlocks parsed from the fixtures, actions, cycles and time series, for the dashboard
and CLI tests and contrib/bench/bench_dashboard.py. `payload` goes into every untrusted field."""
from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

from dbwatch.daemon.state import State
from dbwatch.findings import Finding

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "innodb"
PAYLOAD = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
LONG_FIX = ("End the horizon holder: SELECT pg_terminate_backend(22960); (cancel does nothing to an "
            "idle session), or end the transaction in the application; prevent it with "
            "idle_in_transaction_session_timeout; then VACUUM (VERBOSE) "
            "test.public.que_jobs_story_with_a_long_name;")


def sample_deadlocks() -> list[dict[str, Any]]:
    from dbwatch.deadlocks.record import deadlock_record
    from dbwatch.parsers.innodb_status import parse_status
    out = []
    for name in ("mariadb-laravel-queue-index.txt", "mariadb-opposite-order.txt",
                 "mariadb-laravel-legacy-index.txt", "mysql8-manual-example-status.txt"):
        dl = parse_status((FIXTURES / name).read_text()).deadlock
        if dl:
            out.append(deadlock_record(dl).to_json())
    return out


def fill(path: Path | str, *, findings: int = 6, deadlocks: int = 12, actions: int = 3,
         hours: float = 6.0, points: int = 120, payload: str = PAYLOAD,
         now: float | None = None) -> dict[str, Any]:
    now = time.time() if now is None else now
    st = State(path)
    targets = ["pg-main", "maria-queue"]
    made: list[Finding] = []
    app = f"analytics-report{payload}"
    query = f"SELECT count(*) FROM orders /* {payload} */" if payload else (
        "SELECT o.customer_id, sum(o.total) FROM orders o GROUP BY 1")
    base = [
        ("PG202", "critical", 0, "table app.public.que_jobs",
         f"app.public.que_jobs: 27100 dead tuples (100% of rows), last vacuum never; horizon held "
         f"by pid 22960 (report@{app}, 10.0.0.7, idle in transaction)", LONG_FIX,
         {"table": "app.public.que_jobs", "dead_tuples": 27100, "holder": "pid 22960"}),
        ("PG002", "critical", 0, "pid 22960",
         f"pid 22960 (report@{app}) idle in transaction for 41m12s",
         "End it in the application, or: SELECT pg_terminate_backend(22960); prevent it: "
         "ALTER ROLE report SET idle_in_transaction_session_timeout = '5min';",
         {"pid": 22960, "user": "report", "application": app, "database": "app",
          "state": "idle in transaction", "age": "41m12s", "query": query}),
        ("PG201", "warning", 0, "pid 22960",
         f"xmin horizon of database app held for 41m12s (2710 XIDs) by pid 22960 (report@{app}); "
         "keeps 27100 dead tuples in app.public.que_jobs",
         "SELECT pg_terminate_backend(22960); (cancel does nothing to an idle session)",
         {"pid": 22960, "application": app, "database": "app", "scope": "database"}),
        ("QU301", "warning", 1, "index test.jobs.jobs_queue_reserved_at_index",
         "test.jobs has the legacy index jobs_queue_reserved_at_index (queue, reserved_at) from "
         "Laravel 5.3–5.4: claims on it deadlock with other workers' reserve UPDATE",
         "ALTER TABLE `test`.`jobs` DROP INDEX `jobs_queue_reserved_at_index`, ADD INDEX "
         "`jobs_queue_index` (`queue`), ALGORITHM=INPLACE, LOCK=NONE;",
         {"table": "test.jobs", "index": "jobs_queue_reserved_at_index", "library": "laravel"}),
        ("MY201", "warning", 1, "history list length",
         "InnoDB history list length 184,233 (purge lag); oldest transaction: thread 41 "
         f"(app@10.0.0.9) open 12m{', query ' + payload if payload else ''}",
         "End the oldest transaction (KILL 41;) and keep transactions short.",
         {"history_list_length": 184233, "host": "10.0.0.9", "query": query}),
        ("QU001", "warning", 1, "queue test.jobs/default",
         "test.jobs queue default: 4,812 jobs available, the oldest waiting 6m40s",
         "Add workers or find what stalls them (QU002, MY001).",
         {"table": "test.jobs", "queue": "default", "available": 4812, "library": "laravel"}),
    ]
    for i in range(findings):
        rule, sev, t, subject, summary, fix, ev = base[i % len(base)]
        n = i // len(base)
        made.append(Finding(
            rule=rule, severity=sev, target=targets[t],
            subject=subject if n == 0 else f"{subject} #{n}",
            summary=summary, fix=fix, evidence=dict(ev), identity=["f", i],
        ))
    kill_ts = now - hours * 3600 + int(points * 0.75) * (hours * 3600 / points)
    for t in targets:  # fired 20 minutes before the holder is terminated
        st.update(t, [f for f in made if f.target == t], min(now - 60, kill_ts - 1200))
    samples = sample_deadlocks()
    with st.transaction():
        for i in range(deadlocks):
            dl = copy.deepcopy(samples[i % len(samples)])
            dl["key"] = f"k{i}"
            for trx in dl.get("transactions", []) if payload else []:
                trx["query"] = f"{trx.get('query') or ''} /* {payload} */"
            if dl.get("locks") and payload:
                dl["locks"][0]["table"] = f"jobs{payload}" if i % 5 == 0 else dl["locks"][0]["table"]
            st.record_deadlock(targets[1], dl["key"], dl.get("at"), dl)
        st._db.execute(  # spread over the window, as a daemon running for `hours` would have
            "UPDATE deadlocks SET seen_at = ? - (CAST(substr(key, 2) AS INTEGER) * ?)",
            (now, hours * 3600 / max(deadlocks, 1)),
        )
        kill = int(points * 0.75)  # the story: the horizon holder is terminated here
        step = hours * 3600 / points
        for i in range(actions):
            doc = {"action": "would_terminate" if i else "terminated", "user": "report",
                   "application": f"analytics-report{payload}", "query": f"SELECT 1 /* {payload} */" if payload else query,
                   "reason": f"PG201 firing: holds the xmin horizon of database app{payload} "
                             "for 41m12s; past terminate.after (30m)",
                   "statement": f"SELECT pg_terminate_backend({22960 + i});",
                   "dry_run": bool(i), "finding": "xmin horizon held for 41m12s"}
            st.record_action(targets[0], "PG201", f"fp{i}", f"pid {22960 + i}", doc["action"],
                             json.dumps(doc))
        st._db.execute("UPDATE actions SET ts = ? - (id - 1) * 600", (kill_ts,))
        for j in range(points):
            ts = now - hours * 3600 + j * step
            start = int(points * 0.55)  # the analytics session opens its transaction here
            held = j <= kill
            k = max(0, j - start) if held else kill - start
            after = 0 if held else j - kill
            dead = 300.0 + 600.0 * k if held else max(400.0, 600.0 * k * (0.6 ** after))
            st.record_metrics(targets[0], {
                f"pg.n_dead_tup:app.public.jobs{payload}": dead,
                "pg.n_dead_tup:app.public.que_jobs": dead * 0.45 + 7,
                "pg.n_dead_tup:app.public.orders": 800.0 + 40 * (j % 12),
                "pg.horizon_age_seconds": k * step if held else 2.0,
                "pg.horizon_xid_age": 9.0 * k if held else 3.0,
                "oldest_xact_seconds": k * step if held else 1.0,
                "queue_depth:public.jobs/default": (
                    (20.0 + 8 * k) if held else max(20.0, 8 * k * (0.5 ** after))
                ) + (j % 5),
                "queue_age_seconds:public.jobs/default": (2.0 + 0.9 * k) if held else 2.0,
            }, ts)
            st.record_metrics(targets[1], {"innodb_history_list_length": 1000.0 + 50 * j,
                                           "oldest_xact_seconds": float(j)}, ts)
    st.record_cycle(targets[0], now - 5, 0.42, "ok", None, findings // 2, 0.0)
    st.record_cycle(targets[1], now - 4000, 0.31, "unreachable",
                    "connect to mysql://monitor:hunter2@db2/app failed", 1, 0.0)
    st.close()
    return {"targets": targets, "findings": made}
