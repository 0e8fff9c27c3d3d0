"""summary.json and timeline.png of the MVCC scenario, from its samples, claims and the alerts
the loopback webhook received.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from _common import median, percentile, rounded

WINDOW = 10.0      # seconds for the "start" and "end" figures


def summarise(sc: Any, events: list[dict[str, Any]]) -> dict[str, Any]:
    a, rows, claims = sc.args, sc.rows, sc.claims
    last_t = max((t for t, _, _ in claims), default=0.0)
    start = [ms for t, ms, _ in claims if t < WINDOW]
    end = [ms for t, ms, _ in claims if t >= last_t - WINDOW]
    jobs_start = sum(g for t, _, g in claims if t < WINDOW) / WINDOW
    jobs_end = sum(g for t, _, g in claims if t >= last_t - WINDOW) / WINDOW
    depths = [r["queue_depth"] for r in rows if r["queue_depth"] is not None]
    dead = [r["n_dead_tup"] for r in rows if r["n_dead_tup"] is not None]
    alerts = [e for e in events if not e.get("action") and e.get("status") == "firing"]
    kills = [e for e in events if e.get("action") == "terminated"]
    actions = [e for e in events if e.get("action")]
    killed_at = kills[0]["t"] if kills else None
    analytics_pid = sc.analytics.pid if sc.analytics else None
    med_start = median(start)
    ended_at = killed_at if killed_at is not None else sc.analytics_gone
    recovered = None
    if ended_at is not None and med_start:
        recovered = next((r["t"] for r in rows if r["t"] > ended_at and r["lock_ms_median"]
                          is not None and r["lock_ms_median"] <= 2 * med_start), None)
    return {
        "scenario": "mvcc_bloat", "watchdog": a.watchdog, "table": sc.table,
        "duration_s": a.duration, "workers": a.workers, "rate_jobs_per_s": a.rate,
        "threshold_s": a.threshold_s, "interval_s": a.interval_s, "fill": a.fill,
        "payload_bytes": a.payload, "analytics_at_s": a.analytics_at,
        "vacuum": ("autovacuum" if sc.autovacuum and not sc.vacuum_every else
                   f"scenario VACUUM every {sc.vacuum_every:g}s"
                   + ("" if sc.autovacuum else " (autovacuum is off on this server)")
                   if sc.vacuum_every else "none (autovacuum off)"),
        "lock_ms_median_start": rounded(med_start, 3),
        "lock_ms_median_end": rounded(median(end), 3),
        "lock_ms_p95_start": rounded(percentile(start, 95), 3),
        "lock_ms_p95_end": rounded(percentile(end, 95), 3),
        "lock_ms_median_max": max((r["lock_ms_median"] for r in rows
                                   if r["lock_ms_median"] is not None), default=None),
        "jobs_per_s_start": round(jobs_start, 1), "jobs_per_s_end": round(jobs_end, 1),
        "claims": len(claims), "jobs_done": sum(g for _, _, g in claims),
        "backlog_start": depths[0] if depths else None,
        "backlog_max": max(depths, default=None), "backlog_end": depths[-1] if depths else None,
        "dead_tuples_max": max(dead, default=None), "dead_tuples_end": dead[-1] if dead else None,
        "analytics_pid": analytics_pid, "analytics_opened_s": rounded(sc.analytics_at, 1),
        "analytics_gone_s": sc.analytics_gone,
        "analytics_alive_at_end": sc.analytics is not None and sc.analytics_gone is None,
        "first_alert_s": alerts[0]["t"] if alerts else None,
        "first_alert": _brief(alerts[0]) if alerts else None,
        "terminated_at_s": killed_at,
        "terminations": len(kills),
        "terminated_pids": [e.get("pid") for e in kills],
        "recovered_s": recovered,
        "recovery_after_kill_s": rounded(recovered - ended_at, 1)
        if recovered is not None and ended_at is not None else None,
        "alerts": [_brief(e) for e in alerts][:50],
        "actions": [_brief(e) for e in actions][:50],
        "vacuums_s": sc.vacuums,
        # sessions ended by something other than this run (a shared server): worth knowing
        "connections_lost": sc.lost[:50],
        "analytics_ended_by_other": sc.analytics_gone is not None and not kills,
        "dbwatch_log_tail": sc.watchdog.log_tail() if sc.watchdog else [],
    }


def _brief(e: dict[str, Any]) -> dict[str, Any]:
    return {k: e.get(k) for k in ("t", "status", "rule", "severity", "subject", "action", "pid",
                                  "summary")}


def plot(rows: list[dict[str, Any]], summary: dict[str, Any], path: Path) -> str | None:
    """Queue depth, dead tuples and claim time against time; a note when there is no matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "timeline.png skipped: matplotlib is not installed (pip install 'dbwatch[scenarios]')"
    t = [r["t"] for r in rows]
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    series = [("queue depth (jobs)", [r["queue_depth"] for r in rows], "tab:blue"),
              ("n_dead_tup", [r["n_dead_tup"] for r in rows], "tab:brown")]
    for ax, (label, ys, colour) in zip(axes[:2], series):
        ax.plot(t, ys, color=colour)
        ax.set_ylabel(label)
    ax = axes[2]
    ax.plot(t, [r["lock_ms_median"] for r in rows], label="median", color="tab:green")
    ax.plot(t, [r["lock_ms_p95"] for r in rows], label="p95", color="tab:olive", alpha=0.7)
    ax.set_ylabel("claim time (ms)")
    ax.set_yscale("log")
    ax.set_xlabel("seconds")
    marks = [(summary.get("analytics_opened_s"), "analytics opens", "grey"),
             (summary.get("first_alert_s"), "first alert " + _rule(summary), "tab:orange"),
             (summary.get("terminated_at_s"), "terminated", "tab:red")]
    for x, label, colour in marks:
        if x is None:
            continue
        for i, a in enumerate(axes):
            a.axvline(x, color=colour, linestyle="--", linewidth=1,
                      label=label if i == 2 else None)
    ax.legend(loc="upper left", fontsize="small")
    fig.suptitle(f"mvcc_bloat: {summary['rate_jobs_per_s']:g} jobs/s, {summary['workers']} "
                 f"workers, watchdog {summary['watchdog']}, PostgreSQL "
                 f"{summary.get('machine', {}).get('postgresql', '?')}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return None


def _rule(summary: dict[str, Any]) -> str:
    first = summary.get("first_alert") or {}
    return f"({first.get('rule')})" if first.get("rule") else ""
