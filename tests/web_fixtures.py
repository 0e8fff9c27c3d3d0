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
    from dbwatch.probes.innodb import status_section
    out = []
    for name in ("mariadb-laravel-queue-index.txt", "mariadb-opposite-order.txt",
                 "mariadb-laravel-legacy-index.txt", "mysql8-manual-example-status.txt"):
        dl = status_section((FIXTURES / name).read_text())["deadlock"]
        if dl:
            out.append(dl)
    return out


def fill(path: Path | str, *, findings: int = 6, deadlocks: int = 12, actions: int = 3,
         hours: float = 6.0, points: int = 120, payload: str = PAYLOAD,
         now: float | None = None) -> dict[str, Any]:
    now = time.time() if now is None else now
    st = State(path)
    targets = ["pg-main", "maria-queue"]
    made: list[Finding] = []
    for i in range(findings):
        crit = i % 3 == 0
        made.append(Finding(
            rule=("PG202", "PG002", "QU301", "PG201", "MY001", "QU001")[i % 6],
            severity="critical" if crit else "warning",
            target=targets[i % 2],
            subject=f"table app.public.jobs_{i} {payload}" if i % 2 == 0 else f"pid {1000 + i}",
            summary=f"finding {i}: {payload} keeps dead tuples in app.public.jobs_{i}",
            fix=LONG_FIX if i == 0 else f"SELECT pg_terminate_backend({1000 + i});",
            evidence={"pid": 1000 + i, "application": payload, "query": f"SELECT '{payload}'",
                      "database": "app"},
            identity=["f", i],
        ))
    for t in targets:
        st.update(t, [f for f in made if f.target == t], now - 1800)
    samples = sample_deadlocks()
    with st.transaction():
        for i in range(deadlocks):
            dl = copy.deepcopy(samples[i % len(samples)])
            dl["key"] = f"k{i}"
            for trx in dl.get("transactions", []):
                trx["query"] = f"{trx.get('query') or ''} /* {payload} */"
            if dl.get("locks"):
                dl["locks"][0]["table"] = f"jobs{payload}" if i % 5 == 0 else dl["locks"][0]["table"]
            st.record_deadlock(targets[1], dl["key"], dl.get("at"), dl)
        st._db.execute(  # spread over the window, as a daemon running for `hours` would have
            "UPDATE deadlocks SET seen_at = ? - (CAST(substr(key, 2) AS INTEGER) * ?)",
            (now, hours * 3600 / max(deadlocks, 1)),
        )
        for i in range(actions):
            doc = {"action": "would_terminate" if i else "terminated", "user": "app",
                   "application": payload, "query": f"SELECT 1 /* {payload} */",
                   "reason": f"PG002 firing: {payload}", "statement": "SELECT pg_terminate_backend(1001);",
                   "dry_run": bool(i), "finding": "idle in transaction"}
            st.record_action(targets[0], "PG002", f"fp{i}", f"pid {1001 + i}", doc["action"],
                             json.dumps(doc))
        st._db.execute("UPDATE actions SET ts = ? - id * 600", (now,))
        step = hours * 3600 / points
        for j in range(points):
            ts = now - hours * 3600 + j * step
            st.record_metrics(targets[0], {
                f"pg.n_dead_tup:app.public.jobs{payload}": 100.0 * j,
                "pg.n_dead_tup:app.public.que_jobs": 50.0 * j + 7,
                "pg.horizon_age_seconds": 30.0 * j,
                "pg.horizon_xid_age": 10.0 * j,
                "queue_depth:public.jobs/default": float(j % 40),
                "queue_age_seconds:public.jobs/default": float(j),
            }, ts)
            st.record_metrics(targets[1], {"innodb_history_list_length": 1000.0 + 50 * j,
                                           "oldest_xact_seconds": float(j)}, ts)
    st.record_cycle(targets[0], now - 5, 0.42, "ok", None, findings // 2, 0.0)
    st.record_cycle(targets[1], now - 4000, 0.31, "unreachable",
                    "connect to mysql://monitor:hunter2@db2/app failed", 1, 0.0)
    st.close()
    return {"targets": targets, "findings": made}
