"""Prometheus metrics (--metrics-address) and the gauges read from a snapshot for the history.

gauges() is tolerant: a section that is absent or shaped differently yields nothing.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from .findings import Finding
from .snapshot import Snapshot

# Section names other probes use (or may use); the first present one wins.
_DEAD_TUPLE_SECTIONS = ("pg.dead_tuples", "pg.tables", "pg.table_stats")
_HORIZON_SECTIONS = ("pg.horizon", "pg.xmin_horizon")
_HLL_SECTIONS = ("my.history_list", "my.innodb_status", "my.innodb_metrics", "my.status")
_QUEUE_SECTIONS = ("qu.backlog", "queue.backlog", "pg.queue_backlog", "my.queue_backlog")


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _first(d: Any, *keys: str) -> float | None:
    if not isinstance(d, dict):
        return None
    for k in keys:
        v = _num(d.get(k))
        if v is not None:
            return v
    return None


def _rows(snap: Snapshot, names: tuple[str, ...]) -> list[dict[str, Any]]:
    for name in names:
        data = snap.section(name)
        if isinstance(data, dict):
            data = data.get("rows", data.get("tables", [data]))
        if isinstance(data, list):
            return [r for r in data if isinstance(r, dict)]
    return []


def gauges(snap: Snapshot, findings: Sequence[Finding] = ()) -> dict[str, float]:
    """Series keys -> values for this cycle: oldest_xact_seconds, horizon_age_seconds,
    horizon_xid_age, history_list_length, dead_tuples:<table>, queue_depth:<queue>."""
    out: dict[str, float] = {}
    ages = [_first(r, "xact_seconds", "trx_seconds") for r in
            _rows(snap, ("pg.sessions",)) + _rows(snap, ("my.trx",))
            if r.get("backend_type") in (None, "client backend")]
    if snap.has("pg.sessions") or snap.has("my.trx"):
        out["oldest_xact_seconds"] = max([a for a in ages if a is not None], default=0.0)
    for r in _rows(snap, _HORIZON_SECTIONS):
        for key, names in (("horizon_age_seconds", ("age_seconds", "xact_seconds")),
                           ("horizon_xid_age", ("xid_age", "xmin_age", "age"))):
            v = _first(r, *names)
            if v is not None:
                out[key] = max(out.get(key, 0.0), v)
    for r in _rows(snap, _DEAD_TUPLE_SECTIONS):
        dead = _first(r, "n_dead_tup", "dead", "dead_tuples")
        name = r.get("table") or r.get("relname")
        if dead is not None and name:
            schema = r.get("schema") or r.get("schemaname")
            out[f"dead_tuples:{schema}.{name}" if schema else f"dead_tuples:{name}"] = dead
    for r in _rows(snap, _HLL_SECTIONS):
        v = _first(r, "history_list_length", "hll", "trx_rseg_history_len",
                   "Innodb_history_list_length")
        if v is not None:
            out["history_list_length"] = v
            break
    for r in _rows(snap, _QUEUE_SECTIONS):
        depth = _first(r, "depth", "available", "count")
        if depth is not None:
            key = f"queue_depth:{r.get('table', 'jobs')}/{r.get('queue', 'default')}"
            out[key] = out.get(key, 0.0) + depth
    for f in findings:   # checks' evidence, when a section has another shape
        if f.rule == "MY201" and "history_list_length" not in out:
            v = _first(f.evidence, "hll", "history_list_length")
            if v is not None:
                out["history_list_length"] = v
    return out


@dataclass
class TargetStats:
    up: bool = False
    duration: float = 0.0
    lateness: float = 0.0
    cycles: int = 0
    errors: int = 0
    findings: dict[tuple[str, str], int] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)
    deadlocks: int = 0


class DaemonCollector(Collector):
    """Reads the daemon's latest per-target figures at scrape time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.targets: dict[str, TargetStats] = {}
        self.outbox: dict[str, int] = {}
        self.delivery: dict[str, dict[str, int]] = {}

    def observe(self, target: str, *, up: bool, duration: float, lateness: float, error: bool,
                findings: list[Finding], values: dict[str, float], deadlocks: int) -> None:
        counts: dict[tuple[str, str], int] = {}
        for f in findings:
            counts[(f.rule, f.severity)] = counts.get((f.rule, f.severity), 0) + 1
        with self.lock:
            st = self.targets.setdefault(target, TargetStats())
            st.up, st.duration, st.lateness = up, duration, lateness
            st.cycles += 1
            st.errors += int(error)
            st.findings, st.gauges, st.deadlocks = counts, values, deadlocks

    def forget(self, keep: set[str]) -> None:
        with self.lock:
            for name in list(self.targets):
                if name not in keep:
                    del self.targets[name]

    def collect(self) -> Iterator[Any]:
        with self.lock:
            yield from self._families()

    def _families(self) -> Iterator[Any]:
        g = GaugeMetricFamily
        found = g("dbwatch_findings", "Current findings", labels=["rule", "severity", "target"])
        up = g("dbwatch_target_up", "1 if the last probe reached the target", labels=["target"])
        dur = g("dbwatch_probe_duration_seconds", "Duration of the last cycle", labels=["target"])
        late = g("dbwatch_cycle_lateness_seconds", "Start of the last cycle after its schedule",
                 labels=["target"])
        cyc = CounterMetricFamily("dbwatch_cycles", "Cycles run", labels=["target"])
        err = CounterMetricFamily("dbwatch_probe_errors", "Cycles with an unreachable target "
                                  "or a failed probe", labels=["target"])
        xact = g("dbwatch_oldest_transaction_seconds", "Age of the oldest open transaction",
                 labels=["target"])
        hor = g("dbwatch_horizon_age_seconds", "Age of the xmin horizon holder", labels=["target"])
        horx = g("dbwatch_horizon_xid_age", "XID age of the xmin horizon", labels=["target"])
        hll = g("dbwatch_history_list_length", "InnoDB history list length", labels=["target"])
        dead = g("dbwatch_dead_tuples", "Dead tuples of watched tables", labels=["target", "table"])
        depth = g("dbwatch_queue_depth", "Available jobs", labels=["target", "queue"])
        dl = CounterMetricFamily("dbwatch_deadlocks_seen", "Deadlocks recorded", labels=["target"])
        simple = {"oldest_xact_seconds": xact, "horizon_age_seconds": hor,
                  "horizon_xid_age": horx, "history_list_length": hll}
        for name, st in sorted(self.targets.items()):
            for (rule, sev), n in sorted(st.findings.items()):
                found.add_metric([rule, sev, name], n)
            up.add_metric([name], 1.0 if st.up else 0.0)
            dur.add_metric([name], st.duration)
            late.add_metric([name], st.lateness)
            cyc.add_metric([name], st.cycles)
            err.add_metric([name], st.errors)
            dl.add_metric([name], st.deadlocks)
            for key, value in st.gauges.items():
                if key in simple:
                    simple[key].add_metric([name], value)
                elif key.startswith("dead_tuples:"):
                    dead.add_metric([name, key.split(":", 1)[1]], value)
                elif key.startswith("queue_depth:"):
                    depth.add_metric([name, key.split(":", 1)[1]], value)
        queued = g("dbwatch_alerts_queued", "Messages waiting in the outbox", labels=["receiver"])
        for recv, n in sorted(self.outbox.items()):
            queued.add_metric([recv], n)
        sent = CounterMetricFamily("dbwatch_alerts_sent", "Messages delivered", labels=["receiver"])
        fail = CounterMetricFamily("dbwatch_alert_failures", "Failed delivery attempts",
                                   labels=["receiver"])
        for recv, c in sorted(self.delivery.items()):
            sent.add_metric([recv], c.get("sent", 0))
            fail.add_metric([recv], c.get("failed", 0))
        yield from (found, up, dur, late, cyc, err, xact, hor, horx, hll, dead, depth, dl,
                    queued, sent, fail)


def serve(address: str, collector: DaemonCollector) -> CollectorRegistry:
    """Start /metrics on HOST:PORT (a thread); raises OSError if the port is taken."""
    host, _, port = address.rpartition(":")
    registry = CollectorRegistry()
    registry.register(collector)
    start_http_server(int(port), addr=host.strip("[]") or "0.0.0.0", registry=registry)
    return registry
