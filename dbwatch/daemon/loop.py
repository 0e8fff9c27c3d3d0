"""The daemon: one cycle per target (probe → state → alerts → actions → metrics), --once, and
the main thread that waits for signals.

SIGTERM/SIGINT set a flag: running cycles finish, then exit 0. SIGHUP sets a flag: config
and rules are reloaded, the old ones kept if the new ones are invalid. A cycle that raises
is logged and the daemon carries on. What findings cause (state, alerts, actions) is in
dispatch.py, the config view in setup.py, the signal handling in signals.py.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from ..alerts.delivery import Delivery
from ..config import TargetConfig
from ..errors import ConfigError, UsageError
from ..evaluate import EVERY_RULE
from ..findings import Finding
from ..pipeline import AuditResult, TargetResult, probe_target
from ..probes import ProbeCache, SharedProbes
from ..targets import CONNECT_TIMEOUT_S, ON_OPEN, STATEMENT_TIMEOUT_MS, TargetSpec
from ..targets.pool import ConnectionPool
from .dispatch import Actions, apply_findings, record_deadlocks, unshown_points
from .fleet import Fleet, default_ttl
from .health import Misses, not_answering
from .memory import MemoryKeeper
from .metrics import DaemonCollector, gauges, serve
from .notify import Notifier, Watchdog, status_text, window_for
from .runner import Runner, Slot
from .scheduler import Scheduler, pool_size
from .setup import Setup, load_setup, share_ttl
from .signals import Signals
from .state import State

__all__ = ["NO_ANSWER_AFTER", "STOP_GRACE", "Daemon", "Setup", "load_setup"]

log = logging.getLogger(__name__)
# SIGTERM waits this long for running cycles (one probe's timeout), then shuts them down.
STOP_GRACE = STATEMENT_TIMEOUT_MS / 1000.0
# A cycle that fails after about this long got no answer (connect timeout), it was not refused.
NO_ANSWER_AFTER = 0.8 * CONNECT_TIMEOUT_S


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
        self.collector.deadlock_source = state.deadlock_counts
        self.signals = Signals()  # the main thread waits on these: no polling
        self.misses = Misses()
        self.memory = MemoryKeeper()
        self.actions = Actions(state)
        self.notifier = Notifier()  # systemd Type=notify, when $NOTIFY_SOCKET is set
        self.watchdog = Watchdog(self.notifier, self._watchdog_window())
        self._once = False
        # --once: what ran, and the targets that gave no result (for `--format nagios`)
        self.once_result: tuple[AuditResult, list[str]] = (AuditResult([]), [])
        self._runner: Runner | None = None
        self._sched: Scheduler | None = None
        self.fleet: Fleet | None = None  # several daemons on one PostgreSQL state
        per_server = setup.config.daemon.max_connections_per_server
        self.pool = ConnectionPool(per_server) if per_server > 0 else None
        self.shared = SharedProbes(share_ttl(setup))
        # per target; one target's cycles never overlap, so each cache has one user at a time
        self._probe_caches: dict[str, ProbeCache] = {}
        self._unreadable_logs: set[str] = set()  # log_file paths said once to be unreadable

    @property
    def stop_requested(self) -> bool:
        return self.signals.stop_requested

    @stop_requested.setter
    def stop_requested(self, value: bool) -> None:
        if value:
            self.signals.request_stop()
        else:
            self.signals.stop_requested = False

    # -- one cycle -----------------------------------------------------------------------

    def cycle(self, name: str, scheduled: float, slot: Slot | None = None) -> TargetResult | None:
        if self.fleet is None:
            return self._cycle(name, scheduled, slot)
        if not self._holds(name, len(self.setup.targets)):
            return None
        began = time.time()
        if slot is not None:  # a slow lease check is not the probe: see _slot_job
            slot.probing = began
        result = self._cycle(name, scheduled, slot)
        log.debug(
            "fleet-cycle target=%s daemon=%s start=%.3f end=%.3f",
            name,
            self.fleet.id,
            began,
            time.time(),
        )
        return result

    def _cycle(self, name: str, scheduled: float, slot: Slot | None) -> TargetResult | None:
        setup = self.setup
        entry = setup.targets.get(name)
        if entry is None:
            return None
        spec, tc = entry
        started = time.time()
        lateness = max(0.0, started - scheduled)
        if self._sched is not None:
            self._sched.late(lateness, started)
        token = ON_OPEN.set(slot.opened if slot is not None else None)
        try:
            try:
                result = probe_target(
                    spec,
                    setup.catalogue,
                    setup.config,
                    EVERY_RULE,  # one object: the rules' plan is found by identity
                    self.state,
                    self._probe_caches.setdefault(name, ProbeCache()),
                    self.pool,
                    self.shared,
                )
            finally:
                ON_OPEN.reset(token)
                if slot is not None:
                    slot.release()  # its sessions are back in the pool: not the deadline's
            if slot is not None and slot.abandoned:
                log.info("late answer of %s after its deadline: discarded", name)
                return None
            answered = not (result.error and time.time() - started >= NO_ANSWER_AFTER)
            if answered:
                self.misses.answered(name)
            else:
                self.misses.missed(name, f"no answer within {CONNECT_TIMEOUT_S}s ({result.error})")
            self._after_probe(setup, spec, tc, result, started, lateness, self._silent(name, tc))
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

    def _silent(self, name: str, tc: TargetConfig) -> list[Finding]:
        """DW001 "target not answering" once the target missed enough cycles in a row."""
        miss = self.misses.current(name)
        threshold = 1 if self._once else self.setup.config.daemon.missed_cycles
        if miss is None or miss.count < threshold:
            return []
        return [not_answering(name, miss, threshold, tc.interval)]

    def _missed(self, name: str, why: str) -> None:
        """A scheduled cycle that got no answer (abandoned, or the previous one still hangs)."""
        self.watchdog.beat()  # the daemon works: it found the target not answering
        try:
            self._record_missed(name, why)
        finally:
            if self._sched is not None:  # an abandoned first look: the target's schedule starts
                self._sched.ended(name, time.time())

    def _record_missed(self, name: str, why: str) -> None:
        setup = self.setup
        entry = setup.targets.get(name)
        if entry is None:
            return
        tc = entry[1]
        miss = self.misses.missed(name, why)
        now = time.time()
        silent = self._silent(name, tc)
        try:
            with self.state.transaction():
                self.state.record_cycle(
                    name, now, 0.0, "not answering", f"missed cycle {miss.count}: {why}", 0, 0.0
                )
                if silent:  # every other finding stays as it was: nothing was read
                    keep = set(setup.catalogue)
                    apply_findings(self.state, setup, name, silent, now, tc.interval, keep)
        except Exception:
            log.exception("could not record the missed cycle of %s", name)
            return
        if silent:
            self.delivery.wake()
        self.collector.observe_missed(name)

    def _after_probe(
        self,
        setup: Setup,
        spec: TargetSpec,
        tc: TargetConfig,
        result: TargetResult,
        started: float,
        lateness: float,
        extra: list[Finding] | None = None,
    ) -> None:
        now = time.time()
        findings = [*(extra or []), *result.evaluation.findings]  # extra wins a tie
        if tc.log_file:  # every deadlock from the server log (dbwatch.deadlocks.live)
            findings = [*findings, *self._tail_log(spec, tc)]
        keep = set(result.evaluation.unknown)
        values = gauges(result.snapshot, findings)
        status = (
            "unreachable" if result.error else ("degraded" if result.snapshot.failures else "ok")
        )
        if result.error and self.misses.current(spec.name) is not None:
            status = "not answering"
        # Without the terminate action nothing runs between the findings' commit and the
        # bookkeeping's: one transaction for both (one BEGIN/COMMIT a cycle, not two). It
        # waits for the disk only when the findings changed (State.update, the outbox call
        # want_sync), as the findings' own commit did; the bookkeeping rides along.
        merged = not setup.config.terminate.enabled
        with self.state.transaction(durable=False):
            tr = apply_findings(self.state, setup, spec.name, findings, now, tc.interval, keep)
            if merged:
                duration = time.time() - started
                self._bookkeep(
                    tc, result, values, now, status, (started, duration, lateness), len(findings)
                )
        self.delivery.wake()
        if not merged:
            self.actions.run(
                setup,
                spec,
                tr.firing,
                now,
                lambda: self._still_holds(spec.name),
                result.snapshot,
                findings,
            )
            duration = time.time() - started
            # one commit for the bookkeeping, not waiting for the disk (statebase.transaction)
            with self.state.transaction(durable=False):
                self._bookkeep(
                    tc, result, values, now, status, (started, duration, lateness), len(findings)
                )
        self.collector.observe(
            spec.name,
            up=not result.error,
            duration=duration,
            lateness=lateness,
            error=bool(result.snapshot.failures),
            findings=findings,
            values=values,
        )
        self.state.prune(now)

    def _bookkeep(
        self,
        tc: TargetConfig,
        result: TargetResult,
        values: dict[str, float],
        now: float,
        status: str,
        timing: tuple[float, float, float],
        findings: int,
    ) -> None:
        """A cycle's deadlocks, metrics and record (`dbwatch status`: its `findings` counted),
        inside the caller's transaction; `timing`: started, duration, lateness."""
        name = result.spec.name
        recorded = record_deadlocks(self.state, result)
        points = values
        if not tc.log_file and not result.error:  # the unshown count's points with them
            points = {**unshown_points(self.state, result, recorded), **values}
        if points:
            self.state.record_metrics(name, points, now)
        started, duration, lateness = timing
        self.state.record_cycle(name, started, duration, status, result.error, findings, lateness)

    def _tail_log(self, spec: TargetSpec, tc: TargetConfig) -> list[Finding]:
        from ..deadlocks.live import tail_findings

        try:
            return tail_findings(
                self.state,
                spec.name,
                spec.engine,
                str(tc.log_file),
                warned=self._unreadable_logs,
                scope=spec.scoped_database,
            )
        except Exception:  # a log we cannot read never stops the cycle
            log.exception("tailing log_file %s of %s failed", tc.log_file, spec.name)
            return []

    def _still_holds(self, name: str) -> bool:
        """No fleet, or this daemon still holds the target's lease."""
        return self.fleet is None or self._holds(name, len(self.setup.targets))

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

    def _new_runner(self, job: Callable[[Slot], object]) -> Runner:
        return Runner(
            job,
            pool_size(len(self.setup.targets)),
            self.setup.config.daemon.cycle_timeout,
            self._missed,
            connect_grace=NO_ANSWER_AFTER,
        )

    def run_once(self) -> int:
        """One full cycle of every target, then deliver (bounded); the audit exit code.

        A target that does not answer within cycle_timeout is abandoned and reported (DW001
        "target not answering", exit 3) instead of holding the run."""
        self._once = True
        names = list(self.setup.targets)
        results: dict[str, TargetResult | None] = {}

        def job(slot: Slot) -> None:
            results[slot.name] = self.cycle(slot.name, slot.scheduled, slot)

        runner = self._new_runner(job)
        for n in names:
            runner.answered(n, True)  # all at once: the pool bounds the connections
            runner.submit(n, time.time())
        runner.wait_settled()
        runner.stop(0.0)
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
        got = [results.get(n) for n in names]
        done = AuditResult([r for r in got if r is not None])
        self.once_result = (done, [n for n, r in zip(names, got, strict=True) if r is None])
        code = done.exit_code
        # a cycle that failed counts as unreadable: only a critical finding outranks it
        return code if code == 2 or all(r is not None for r in got) else 3

    # -- the daemon loop ---------------------------------------------------------------------

    def run_forever(self) -> int:
        """Waits on signals (no polling); SIGTERM exits within STOP_GRACE whatever runs."""
        self.signals.install()
        self.memory.start()
        self.collector.outbox_source = self.state.outbox_size
        if self.metrics_address:
            try:
                serve(self.metrics_address, self.collector)
            except (OSError, ValueError) as exc:
                raise UsageError(f"--metrics-address {self.metrics_address}: {exc}") from None
        self.delivery.start(self.setup.config.alerts)
        self.delivery.report_orphans(self.setup.config.alerts)
        runner = self._new_runner(self._slot_job)
        sched = self._new_scheduler(runner)
        log.info("watching %d targets; state in %s", len(self.setup.targets), self.state.path)
        self.notifier.ready(f"watching {len(self.setup.targets)} target(s)")
        while not self.signals.stop_requested:
            # only a signal wakes the main thread, or (under systemd) its watchdog tick
            self.signals.wait(self.watchdog.timeout())
            if self.signals.take_reload():
                self.notifier.reloading()
                sched, runner = self.reload(sched, runner)
                self.watchdog.window = self._watchdog_window()
                self.notifier.ready(status_text(self.collector))
            self.watchdog.tick(status_text(self.collector))  # pings only while cycles end
        self.notifier.stopping()
        log.info("stopping: letting running cycles finish (at most %.0fs)", STOP_GRACE)
        sched.shutdown(wait=False)
        left = runner.stop(STOP_GRACE)
        if left:
            log.warning(
                "stopped while %d cycles still ran (%s): their connections were shut down",
                len(left),
                ", ".join(left[:5]),
            )
        self.delivery.stop(timeout=2.0)
        if self.fleet is not None:
            self.fleet.stop(release=True)
        if self.pool is not None:
            self.pool.discard()
        self.memory.stop()
        self.notifier.close()
        log.info("stopped")
        return 0

    def _watchdog_window(self) -> float:
        intervals = [tc.interval for _, tc in self.setup.targets.values()]
        timeout = self.setup.config.daemon.cycle_timeout
        return window_for(intervals, timeout, self.notifier.watchdog_every)

    def _slot_job(self, slot: Slot) -> None:
        result = self.cycle(slot.name, slot.scheduled, slot)
        self.watchdog.beat()
        if not slot.abandoned and self._runner is not None:
            self._runner.answered(slot.name, result is not None and not result.error)
        if self._sched is not None:
            # after a first look the interval job starts at least half an interval after the
            # probe began, not the slot: a lease check that took long (a loaded state
            # database) brought the next probe of the target closer than that
            self._sched.ended(slot.name, slot.probing or slot.started)

    def _new_scheduler(self, runner: Runner) -> Scheduler:
        self._runner = runner
        sched = Scheduler(runner.submit, runner.pool, jobs=runner.submit_all)
        self._sched = sched
        # the start-up done, what is alive stays: out of the garbage collector's way (memory.py)
        sched.on_looked = self.memory.settle_soon
        self.collector.awaiting_source = sched.awaiting_first_look
        sched.set_targets((n, tc.interval) for n, (_, tc) in self.setup.targets.items())
        sched.start()
        return sched

    def reload(self, sched: Scheduler, runner: Runner) -> tuple[Scheduler, Runner]:
        try:
            new = load_setup(self.config_path)
        except ConfigError as exc:
            for problem in exc.problems:
                log.error("config reload failed, keeping the running config: %s", problem)
            return sched, runner
        old, self.setup = self.setup, new
        keep = set(new.targets)
        self.collector.forget(keep)
        self.misses.forget(keep)
        runner.forget(keep)
        for name in [n for n in self._probe_caches if n not in keep]:
            del self._probe_caches[name]
        if self.pool is not None:  # URLs or credentials may have changed: fresh sessions
            self.pool.discard()
        self.shared = SharedProbes(share_ttl(new))
        if new.config.alerts != old.config.alerts:
            self.delivery.start(new.config.alerts)  # stops (joins) the old workers first
        self.delivery.report_orphans(new.config.alerts)
        log.warning(
            "config reloaded: %d targets, %d receivers", len(new.targets), len(new.config.alerts)
        )
        if (
            pool_size(len(new.targets)) != runner.pool
            or new.config.daemon.cycle_timeout != runner.timeout
        ):
            runner.resize(pool_size(len(new.targets)), new.config.daemon.cycle_timeout)
        sched.set_targets((n, tc.interval) for n, (_, tc) in new.targets.items())
        self.memory.settle_soon()  # the old config's objects collected, even in cycles
        return sched, runner
