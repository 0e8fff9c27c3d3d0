"""Prometheus metrics (--metrics-address); the values a cycle records in the state history are
dbwatch.figures.gauges() (re-exported here), shared with the Nagios perfdata.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import field

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..figures import gauges, server_deadlocks
from ..findings import Finding
from ..frozen import mutable

__all__ = ["DaemonCollector", "TargetStats", "gauges", "serve", "server_deadlocks"]
log = logging.getLogger(__name__)


@mutable
class TargetStats:
    up: bool = False
    duration: float = 0.0
    lateness: float = 0.0
    cycles: int = 0
    errors: int = 0
    missed: int = 0
    findings: dict[tuple[str, str], int] = field(default_factory=dict)
    gauges: dict[str, float] = field(default_factory=dict)
    deadlocks: int = 0


class DaemonCollector(Collector):
    """Reads the daemon's latest per-target figures at scrape time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.targets: dict[str, TargetStats] = {}
        self.outbox: dict[str, int] = {}
        self.outbox_source: Callable[[], dict[str, int]] | None = None  # read at scrape time
        # deadlocks recorded per target, read at scrape time (one query for every target), not
        # counted by each cycle (a state read per target-cycle)
        self.deadlock_source: Callable[[], dict[str, int]] | None = None
        self.delivery: dict[str, dict[str, int]] = {}
        # targets not looked at yet since the daemon started (or since a reload added them)
        self.awaiting_source: Callable[[], int] | None = None

    def awaiting(self) -> int:
        return self.awaiting_source() if self.awaiting_source is not None else 0

    def observe(
        self,
        target: str,
        *,
        up: bool,
        duration: float,
        lateness: float,
        error: bool,
        findings: list[Finding],
        values: dict[str, float],
        deadlocks: int | None = None,
    ) -> None:
        counts: dict[tuple[str, str], int] = {}
        for f in findings:
            counts[(f.rule, f.severity)] = counts.get((f.rule, f.severity), 0) + 1
        with self.lock:
            st = self.targets.setdefault(target, TargetStats())
            st.up, st.duration, st.lateness = up, duration, lateness
            st.cycles += 1
            st.errors += int(error)
            st.findings, st.gauges = counts, values
            if deadlocks is not None:
                st.deadlocks = deadlocks

    def _deadlocks_seen(self) -> dict[str, int] | None:
        if self.deadlock_source is None:
            return None
        try:
            return self.deadlock_source()
        except Exception:  # the state is away: the last values the cycles gave
            log.debug("deadlock counts unavailable", exc_info=True)
            return None

    def observe_missed(self, target: str) -> None:
        """A scheduled cycle that got no answer (the target hangs)."""
        with self.lock:
            st = self.targets.setdefault(target, TargetStats())
            st.up = False
            st.missed += 1

    def forget(self, keep: set[str]) -> None:
        with self.lock:
            for name in list(self.targets):
                if name not in keep:
                    del self.targets[name]

    def collect(self) -> Iterator[Metric]:
        with self.lock:
            yield from self._families()

    def _families(self) -> Iterator[Metric]:
        g = GaugeMetricFamily
        found = g("dbwatch_findings", "Current findings", labels=["rule", "severity", "target"])
        up = g("dbwatch_target_up", "1 if the last probe reached the target", labels=["target"])
        dur = g("dbwatch_probe_duration_seconds", "Duration of the last cycle", labels=["target"])
        late = g(
            "dbwatch_cycle_lateness_seconds",
            "Start of the last cycle after its schedule",
            labels=["target"],
        )
        cyc = CounterMetricFamily("dbwatch_cycles", "Cycles run", labels=["target"])
        err = CounterMetricFamily(
            "dbwatch_probe_errors",
            "Cycles with an unreachable target or a failed probe",
            labels=["target"],
        )
        xact = g(
            "dbwatch_oldest_transaction_seconds",
            "Age of the oldest open transaction",
            labels=["target"],
        )
        hor = g("dbwatch_horizon_age_seconds", "Age of the xmin horizon holder", labels=["target"])
        horx = g("dbwatch_horizon_xid_age", "XID age of the xmin horizon", labels=["target"])
        hll = g("dbwatch_history_list_length", "InnoDB history list length", labels=["target"])
        dead = g("dbwatch_dead_tuples", "Dead tuples of watched tables", labels=["target", "table"])
        depth = g("dbwatch_queue_depth", "Available jobs", labels=["target", "queue"])
        dl = g("dbwatch_deadlocks_seen", "Deadlocks recorded in the state DB", labels=["target"])
        srv = g("dbwatch_server_deadlocks", "The server's deadlock counter", labels=["target"])
        qage = g(
            "dbwatch_queue_oldest_available_seconds",
            "Age of the oldest available job",
            labels=["target", "queue"],
        )
        simple = {
            "oldest_xact_seconds": xact,
            "pg.horizon_age_seconds": hor,
            "pg.horizon_xid_age": horx,
            "innodb_history_list_length": hll,
        }
        prefixed = {"pg.n_dead_tup:": dead, "queue_depth:": depth, "queue_age_seconds:": qage}
        seen = self._deadlocks_seen()
        for name, st in sorted(self.targets.items()):
            for (rule, sev), n in sorted(st.findings.items()):
                found.add_metric([rule, sev, name], n)
            up.add_metric([name], 1.0 if st.up else 0.0)
            dur.add_metric([name], st.duration)
            late.add_metric([name], st.lateness)
            cyc.add_metric([name], st.cycles)
            err.add_metric([name], st.errors)
            dl.add_metric([name], seen.get(name, 0) if seen is not None else st.deadlocks)
            deadlocks = server_deadlocks(st.gauges)
            if deadlocks is not None:
                srv.add_metric([name], deadlocks)
            for key, value in st.gauges.items():
                if key in simple:
                    simple[key].add_metric([name], value)
                    continue
                for prefix, family in prefixed.items():
                    if key.startswith(prefix):
                        family.add_metric([name, key[len(prefix) :]], value)
        missed = CounterMetricFamily(
            "dbwatch_cycles_missed",
            "Scheduled cycles the target did not answer (deadline, still hanging)",
            labels=["target"],
        )
        for name, st in sorted(self.targets.items()):
            missed.add_metric([name], st.missed)
        queued = g("dbwatch_alerts_queued", "Messages waiting in the outbox", labels=["receiver"])
        outbox = self.outbox
        if self.outbox_source is not None:
            try:
                outbox = self.outbox_source()
            except Exception:
                log.debug("outbox size unavailable", exc_info=True)
        for recv, n in sorted(outbox.items()):
            queued.add_metric([recv], n)
        sent = CounterMetricFamily("dbwatch_alerts_sent", "Messages delivered", labels=["receiver"])
        fail = CounterMetricFamily(
            "dbwatch_alert_failures", "Failed delivery attempts", labels=["receiver"]
        )
        for recv, c in sorted(self.delivery.items()):
            sent.add_metric([recv], c.get("sent", 0))
            fail.add_metric([recv], c.get("failed", 0))
        first = g(
            "dbwatch_targets_awaiting_first_look",
            "Targets not read yet since the daemon started or a reload added them",
        )
        first.add_metric([], self.awaiting())
        yield from (
            first,
            found,
            up,
            dur,
            late,
            cyc,
            err,
            missed,
            xact,
            hor,
            horx,
            hll,
            dead,
            depth,
            qage,
            dl,
            srv,
            queued,
            sent,
            fail,
        )


def serve(address: str, collector: DaemonCollector) -> CollectorRegistry:
    """Start /metrics on HOST:PORT (a thread); raises OSError if the port is taken."""
    host, _, port = address.rpartition(":")
    registry = CollectorRegistry()
    registry.register(collector)
    start_http_server(int(port), addr=host.strip("[]") or "0.0.0.0", registry=registry)
    return registry
