"""The daemon: one cycle per target (probe → state → alerts → actions → metrics), signals, --once.

SIGTERM/SIGINT set a flag: running cycles finish, then exit 0. SIGHUP sets a flag: config
and rules are reloaded, the old ones kept if the new ones are invalid. A cycle that raises
is logged and the daemon carries on.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..alerts.delivery import Delivery
from ..alerts.router import Policy, announce, route
from ..catalogue import Rule, load_catalogue
from ..config import Config, TargetConfig, load_config
from ..errors import ConfigError, TargetError, UsageError
from ..evaluate import Selection
from ..findings import Finding
from ..pipeline import AuditResult, TargetResult, probe_target
from ..probes import ProbeCache, SharedProbes
from ..targets import TargetSpec, spec_from_config
from ..targets.pool import ConnectionPool
from .fleet import Fleet, default_ttl
from .metrics import DaemonCollector, gauges, serve
from .scheduler import Scheduler, pool_size
from .state import State, Transitions

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Setup:
    """One consistent view of config and rules; swapped whole on reload."""

    catalogue: dict[str, Rule]
    config: Config
    targets: dict[str, tuple[TargetSpec, TargetConfig]]
    policies: tuple[Policy, ...]

    def for_seconds(self, rule: str) -> float:
        override = self.config.rules.get(rule)
        return (override.for_seconds or 0.0) if override is not None else 0.0


def load_setup(path: Path | None) -> Setup:
    """Config and rules, validated; raises ConfigError with every problem."""
    catalogue = load_catalogue()
    config = load_config(path, catalogue)
    problems, targets = [], {}
    for t in config.targets:
        try:
            targets[t.name] = (spec_from_config(t), t)  # the same builder as audit
        except TargetError as exc:
            problems.append(f"{path}: targets.{t.name}.url: {exc.detail}")
    if not targets and not problems:
        problems.append(f"{path or 'no config file'}: no [[targets]] to watch")
    if problems:
        raise ConfigError(problems)
    return Setup(catalogue, config, targets, tuple(Policy.of(a) for a in config.alerts))


class Daemon:
    def __init__(
        self,
        config_path: Path | None,
        state: State,
        setup: Setup,
        metrics_address: str | None = None,
        flush_budget: float = 20.0,
        backoff: tuple[float, float] = (1.0, 60.0),
    ) -> None:
        self.config_path = config_path
        self.state = state
        self.setup = setup
        self.metrics_address = metrics_address
        self.flush_budget = flush_budget
        self.collector = DaemonCollector()
        self.delivery = Delivery(state, *backoff)
        self.collector.delivery = self.delivery.stats
        self.stop_requested = False
        self.reload_requested = False
        self._terminate_missing_logged = False
        self.fleet: Fleet | None = None  # several daemons on one PostgreSQL state
        per_server = setup.config.daemon.max_connections_per_server
        self.pool = ConnectionPool(per_server) if per_server > 0 else None
        self.shared = SharedProbes(_share_ttl(setup))
        # per target; one target's cycles never overlap, so each cache has one user at a time
        self._probe_caches: dict[str, ProbeCache] = {}

    # -- one cycle -----------------------------------------------------------------------

    def cycle(self, name: str, scheduled: float) -> TargetResult | None:
        if self.fleet is None:
            return self._cycle(name, scheduled)
        if not self._holds(name, len(self.setup.targets)):
            return None
        began = time.time()
        result = self._cycle(name, scheduled)
        log.debug(
            "fleet-cycle target=%s daemon=%s start=%.3f end=%.3f",
            name,
            self.fleet.id,
            began,
            time.time(),
        )
        return result

    def _cycle(self, name: str, scheduled: float) -> TargetResult | None:
        setup = self.setup
        entry = setup.targets.get(name)
        if entry is None:
            return None
        spec, tc = entry
        started = time.time()
        lateness = max(0.0, started - scheduled)
        try:
            result = probe_target(
                spec,
                setup.catalogue,
                setup.config,
                Selection(),
                self.state,
                self._probe_caches.setdefault(name, ProbeCache()),
                self.pool,
                self.shared,
            )
            self._after_probe(setup, spec, tc, result, started, lateness)
            return result
        except Exception as exc:  # patroni style: log, record, carry on with the next cycle
            log.exception("cycle of %s failed", name)
            try:
                self.state.record_cycle(
                    name,
                    started,
                    time.time() - started,
                    "error",
                    f"{type(exc).__name__}: {exc}"[:300],
                    0,
                    lateness,
                )
            except Exception:
                log.exception("could not record the failed cycle of %s", name)
            return None

    def _after_probe(
        self,
        setup: Setup,
        spec: TargetSpec,
        tc: TargetConfig,
        result: TargetResult,
        started: float,
        lateness: float,
    ) -> None:
        now = time.time()
        findings = result.evaluation.findings
        if tc.log_file:  # every deadlock from the server log (dbwatch.deadlocks.live)
            findings = [*findings, *self._tail_log(spec, tc)]
        with self.state.transaction():
            tr = self.state.update(
                spec.name, findings, now, setup.for_seconds, keep_rules=result.evaluation.unknown
            )
            route(self.state, spec.name, setup.policies, now, tc.interval)
        self.delivery.wake()
        _log_transitions(spec.name, tr)
        self._actions(setup, spec, now)
        values = gauges(result.snapshot, findings)
        duration = time.time() - started
        status = (
            "unreachable" if result.error else ("degraded" if result.snapshot.failures else "ok")
        )
        with self.state.transaction():  # one commit (one fsync) for the bookkeeping
            _record_deadlocks(self.state, result)
            if values:
                self.state.record_metrics(spec.name, values, now)
            self.state.record_cycle(
                spec.name, started, duration, status, result.error, len(findings), lateness
            )
        self.collector.observe(
            spec.name,
            up=not result.error,
            duration=duration,
            lateness=lateness,
            error=bool(result.snapshot.failures),
            findings=findings,
            values=values,
            deadlocks=self.state.deadlock_count(spec.name),
        )
        self.state.prune(now)

    def _tail_log(self, spec: TargetSpec, tc: TargetConfig) -> list[Finding]:
        from ..deadlocks.live import tail_findings

        try:
            return tail_findings(self.state, spec.name, spec.engine, str(tc.log_file))
        except Exception:  # a log we cannot read never stops the cycle
            log.exception("tailing log_file %s of %s failed", tc.log_file, spec.name)
            return []

    def _actions(self, setup: Setup, spec: TargetSpec, now: float) -> None:
        cfg = setup.config.terminate
        if not cfg.enabled:
            return
        try:
            from ..actions.terminate import daemon_terminate  # written alongside; may be absent
        except ImportError as exc:
            if not self._terminate_missing_logged:
                log.error("[terminate] is enabled but the terminate action is unavailable: %s", exc)
                self._terminate_missing_logged = True
            return
        firing = [
            (r.finding, now - (r.fired_at or r.first_seen))
            for r in self.state.firing(spec.name)
            if r.rule in cfg.rules
        ]
        if not firing:
            return
        if self.fleet is not None and not self._holds(spec.name, len(setup.targets)):
            return  # fenced: the lease moved on during this cycle; the new holder decides
        notify: Callable[[dict[str, Any]], None] = lambda action: announce(
            self.state, setup.policies, action, time.time()
        )
        try:
            done = daemon_terminate(spec, cfg, firing, self.state, notify)
        except Exception:
            log.exception("terminate action on %s failed", spec.name)
            return
        for action in done or []:
            log.warning("action on %s: %s", spec.name, action)

    def _holds(self, name: str, total: int) -> bool:
        assert self.fleet is not None
        try:
            return self.fleet.claim_target(name, total)
        except Exception:  # the state DB is away: probe nothing rather than twice
            log.warning("fleet: cannot check the lease of %s; skipping", name, exc_info=True)
            return False

    def join_fleet(self, ttl: float | None) -> None:
        """Share the targets with the other daemons on this PostgreSQL state (leases)."""
        intervals = [tc.interval for _, tc in self.setup.targets.values()]
        self.fleet = Fleet(self.state, ttl or default_ttl(intervals))
        self.delivery.gate = self.fleet.claim_receiver
        self.fleet.start()

    # -- --once ----------------------------------------------------------------------------

    def run_once(self) -> int:
        """One full cycle of every target, then deliver (bounded); the audit exit code."""
        names = list(self.setup.targets)
        with ThreadPoolExecutor(max_workers=pool_size(len(names))) as pool:
            results = list(pool.map(lambda n: self.cycle(n, time.time()), names))
        left = self.delivery.flush(self.setup.config.alerts, self.flush_budget)
        if left:
            log.warning(
                "%d alert messages could not be delivered yet; they stay queued in %s "
                "and go out on the next run",
                left,
                self.state.path,
            )
        if self.pool is not None:
            self.pool.discard()
        code = AuditResult([r for r in results if r is not None]).exit_code
        # a cycle that failed counts as unreadable: only a critical finding outranks it
        return code if code == 2 or all(r is not None for r in results) else 3

    # -- the daemon loop ---------------------------------------------------------------------

    def run_forever(self) -> int:
        self._install_signals()
        if self.metrics_address:
            try:
                serve(self.metrics_address, self.collector)
            except (OSError, ValueError) as exc:
                raise UsageError(f"--metrics-address {self.metrics_address}: {exc}") from None
        self.delivery.start(self.setup.config.alerts)
        sched = self._new_scheduler()
        log.info("watching %d targets; state in %s", len(self.setup.targets), self.state.path)
        while not self.stop_requested:
            time.sleep(0.2)
            if self.reload_requested:
                self.reload_requested = False
                sched = self.reload(sched)
            self.collector.outbox = self.state.outbox_size()
        log.info("stopping: letting running cycles finish")
        sched.shutdown(wait=True)
        self.delivery.stop(timeout=2.0)
        if self.fleet is not None:
            self.fleet.stop(release=True)
        if self.pool is not None:
            self.pool.discard()
        log.info("stopped")
        return 0

    def _new_scheduler(self) -> Scheduler:
        sched = Scheduler(self.cycle, pool_size(len(self.setup.targets)))
        sched.set_targets((n, tc.interval) for n, (_, tc) in self.setup.targets.items())
        sched.start()
        return sched

    def reload(self, sched: Scheduler) -> Scheduler:
        try:
            new = load_setup(self.config_path)
        except ConfigError as exc:
            for problem in exc.problems:
                log.error("config reload failed, keeping the running config: %s", problem)
            return sched
        old, self.setup = self.setup, new
        self.collector.forget(set(new.targets))
        if self.pool is not None:  # URLs or credentials may have changed: fresh sessions
            self.pool.discard()
        self.shared = SharedProbes(_share_ttl(new))
        if new.config.alerts != old.config.alerts:
            self.delivery.start(new.config.alerts)
        log.warning(
            "config reloaded: %d targets, %d receivers", len(new.targets), len(new.config.alerts)
        )
        if pool_size(len(new.targets)) > sched.threads:
            sched.shutdown(wait=True)
            return self._new_scheduler()
        sched.set_targets((n, tc.interval) for n, (_, tc) in new.targets.items())
        return sched

    def _install_signals(self) -> None:
        def stop(signum: int, _frame: Any) -> None:
            self.stop_requested = True

        def hup(signum: int, _frame: Any) -> None:
            self.reload_requested = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGHUP, hup)


def _record_deadlocks(state: State, result: TargetResult) -> None:
    """The latest InnoDB deadlock, deduplicated by its key (for `dbwatch deadlocks --history`)."""
    status = result.snapshot.section("my.innodb_status")
    dl = status.get("deadlock") if isinstance(status, dict) else None
    if (
        isinstance(dl, dict)
        and dl.get("key")
        and state.record_deadlock(result.spec.name, str(dl["key"]), dl.get("at"), dl)
    ):
        log.info("new deadlock on %s at %s", result.spec.name, dl.get("at"))


def _log_transitions(target: str, tr: Transitions) -> None:
    for r in tr.fired:
        log.warning(
            "firing %s %s on %s: %s: %s",
            r.severity,
            r.rule,
            target,
            r.subject,
            r.data.get("summary", ""),
        )
    for r in tr.resolved:
        log.info("resolved %s on %s: %s", r.rule, target, r.subject)


def _share_ttl(setup: Setup) -> float:
    """Server-wide probe results serve the server's targets for half the shortest interval,
    so each runs about twice an interval however many databases of that server are watched."""
    intervals = [tc.interval for _, tc in setup.targets.values()]
    return max(1.0, min(intervals, default=15.0) / 2.0)
