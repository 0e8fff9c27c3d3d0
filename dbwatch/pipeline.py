"""One audit pass: open each target, run the probes its rules need, evaluate, close."""

from __future__ import annotations

import logging
import sys
import threading
import time
from dataclasses import field

from .catalogue import Rule
from .checks import load_checks
from .checks.history import History
from .config import Config
from .errors import TargetError
from .evaluate import (
    Evaluation,
    Selection,
    evaluate,
    plan_rules,
    rules_sections,
    sections_known,
)
from .findings import Finding, nagios_status, severity_rank
from .frozen import mutable
from .probes import ProbeCache, ProbeStats, SharedProbes, run_probes, unreachable_snapshot
from .snapshot import Snapshot
from .targets import Connection, TargetSpec, open_target, scrub, url_parts
from .targets.pool import ConnectionPool, server_key

log = logging.getLogger(__name__)
ALL_RULES = Selection()


@mutable
class TargetResult:
    spec: TargetSpec
    snapshot: Snapshot
    evaluation: Evaluation
    error: str | None = None
    stats: ProbeStats = field(default_factory=ProbeStats)
    seconds: float = 0.0

    @property
    def status(self) -> str:
        return "unreachable" if self.error else "ok"

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.spec.name,
            "engine": self.snapshot.engine,
            "server_version": self.snapshot.server_version,
            "status": self.status,
            "error": self.error,
            "rules_run": sorted(self.evaluation.ran),
            "rules_unknown": self.evaluation.unknown,
            "unavailable": self.snapshot.unavailable(),
        }


@mutable
class AuditResult:
    targets: list[TargetResult]
    extra_findings: list[Finding] = field(default_factory=list)
    logs: list[dict[str, object]] = field(default_factory=list)  # `--log` analysis stats
    input_errors: list[str] = field(default_factory=list)  # files read only in part (exit 3)
    generated_at: float = field(default_factory=time.time)

    @property
    def findings(self) -> list[Finding]:
        out = [f for t in self.targets for f in t.evaluation.findings] + self.extra_findings
        return sorted(out, key=_finding_order)

    def counts(self) -> dict[str, int]:
        """critical / warning findings (DW001 excluded) and unreadable targets or probes."""
        found = self.findings
        out = {
            "critical": sum(1 for f in found if f.rule != "DW001" and f.severity == "critical"),
            "warning": sum(1 for f in found if f.rule != "DW001" and f.severity == "warning"),
            "unreadable": len(self.input_errors),
        }
        for t in self.targets:
            if t.error:
                out["unreadable"] += 1
                continue
            dw = [f for f in t.evaluation.findings if f.rule == "DW001"]
            out["unreadable"] += len(dw) or (1 if t.evaluation.unknown else 0)
        return out

    @property
    def status(self) -> str:
        """critical > unknown (a target or probe could not be read) > warning > ok."""
        return self._verdict()[0]

    @property
    def exit_code(self) -> int:
        return self._verdict()[1]

    def _verdict(self) -> tuple[str, int]:
        c = self.counts()
        unknown = c["unreadable"] + sum(1 for f in self.findings if f.rule == "DW001")
        return nagios_status(c["critical"], unknown, c["warning"])

    def status_line(self) -> str:
        """The last line of the table: each count, then the status."""
        c = self.counts()
        parts = [
            f"{n} {word if n == 1 else plural}"
            for n, word, plural in (
                (c["critical"], "critical", "critical"),
                (c["warning"], "warning", "warnings"),
                (c["unreadable"], "unreadable", "unreadable"),
            )
            if n
        ]
        return f"{', '.join(parts) or 'no findings'} — Status: {self.status.upper()}"


def _finding_order(f: Finding) -> tuple[int, str, str, str]:
    return -severity_rank(f.severity), f.target, f.rule, f.subject


def probe_target(
    spec: TargetSpec,
    catalogue: dict[str, Rule],
    config: Config,
    selection: Selection,
    state: History | None = None,
    cache: ProbeCache | None = None,
    pool: ConnectionPool | None = None,
    shared: SharedProbes | None = None,
    overlap: bool = False,
) -> TargetResult:
    """One target: connect (or take its kept session from `pool`), probe, evaluate. With
    `overlap` (a one-target audit), the probes run while the check modules import."""
    started = time.perf_counter()
    if overlap and pool is None and cache is None and shared is None:
        return _overlapped_target(spec, catalogue, config, selection, state, started)
    stats = ProbeStats()
    try:
        conn, reused = pool.checkout(spec) if pool is not None else (open_target(spec), False)
    except TargetError as exc:
        return _unreachable(spec, catalogue, config, state, exc, started)
    broken = False
    held: Connection | None = conn
    try:
        rules = plan_rules(conn.flavour, catalogue, config, selection)
        needed = rules_sections(conn.flavour, rules)
        share = (shared, share_key(spec)) if shared is not None else None
        try:
            snap = run_probes(conn, spec.name, needed, stats, config, cache, shared=share)
        except TargetError:
            if not reused or pool is None:
                raise
            # the kept session died between cycles: once more on a fresh one
            pool.checkin(spec, conn, broken=True)
            held = None
            conn, reused = pool.checkout(spec)
            held = conn
            stats = ProbeStats()
            snap = run_probes(conn, spec.name, needed, stats, config, cache, shared=share)
    except TargetError as exc:
        broken = True
        return _unreachable(spec, catalogue, config, state, exc, started)
    finally:
        if held is not None:
            if pool is not None:
                pool.checkin(spec, held, broken)
            else:
                held.close()
    ev = evaluate(snap, catalogue, config, selection, state)
    return TargetResult(spec, snap, ev, stats=stats, seconds=time.perf_counter() - started)


# the flavours a target of an engine may turn out to be once connected
_FLAVOURS = {"postgresql": ("postgresql",), "mysql": ("mysql", "mariadb")}


class _Worker:
    """A one-target audit's other thread: opens the session, waits for `go`, probes (what
    it needs is imported by the main thread before `go`; it imports nothing)."""

    def __init__(self, spec: TargetSpec, config: Config) -> None:
        self.spec, self.config = spec, config
        self.opened, self.go = threading.Event(), threading.Event()
        self.probing = threading.Event()  # set once it probes, or has nothing to probe
        self.conn: Connection | None = None
        self.needed: frozenset[str] | None = None  # None at `go`: nothing to probe
        self.stats = ProbeStats()
        self.snap: Snapshot | None = None
        self.failed: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        finally:
            self.probing.set()

    def _run(self) -> None:
        try:
            self.conn = open_target(self.spec)
        except BaseException as exc:  # noqa: BLE001 - re-raised by the main thread
            self.failed = exc
        finally:
            self.opened.set()
        if self.conn is None:
            return
        self.go.wait()
        if self.needed is None:
            return
        self.probing.set()  # the main thread imports the checks from here on
        try:
            self.snap = run_probes(self.conn, self.spec.name, self.needed, self.stats, self.config)
        except BaseException as exc:  # noqa: BLE001 - re-raised by the main thread
            self.failed = exc


def _overlapped_target(
    spec: TargetSpec,
    catalogue: dict[str, Rule],
    config: Config,
    selection: Selection,
    state: History | None,
    started: float,
) -> TargetResult:
    """probe_target for a one-target audit: the waits on the server overlap the imports. A
    worker thread opens the session while this one imports the probe modules and the
    section families the rules read (from checks.CHECK_READS, for every flavour the engine
    may turn out to be), then probes while this one imports the rules' check modules. The
    two threads never import at once the same modules: the driver is imported here first,
    and the worker imports nothing. A short switch interval meanwhile: the worker takes
    each reply at once, not after up to 5 ms of imports. Same sections, rules and errors as
    probe_target without overlap."""
    from .probes.registry import engine_probes
    from .snapshot.sections import section_key
    from .targets import load_driver

    load_driver(spec.engine)
    work = _Worker(spec, config)
    worker = threading.Thread(target=work.run, name=f"dbwatch-probe-{spec.name}", daemon=True)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    rules: tuple[Rule, ...] = ()
    try:
        worker.start()
        try:
            engine_probes(spec.engine)
            for flavour in _FLAVOURS.get(spec.engine, ()):
                for name in (
                    sections_known(flavour, plan_rules(flavour, catalogue, config, selection)) or ()
                ):
                    section_key(name)
            work.opened.wait()
            if work.conn is not None:
                flavour = work.conn.flavour
                rules = plan_rules(flavour, catalogue, config, selection)
                needed = sections_known(flavour, rules)
                if needed is None:  # a check not in CHECK_READS: its module says (imported here)
                    needed = set(rules_sections(flavour, rules))
                for name in needed:
                    section_key(name)
                work.needed = frozenset(needed)
        finally:
            work.go.set()  # the worker never waits for ever (no `needed`: it just returns)
        # the checks import once the worker probes (its first statement sent, it waits on the
        # server), not in the moment before it takes the interpreter back
        work.probing.wait(10.0)
        load_checks(r.check for r in rules)
    finally:
        worker.join()
        sys.setswitchinterval(interval)
        if work.conn is not None:
            work.conn.close()
    if isinstance(work.failed, TargetError):
        return _unreachable(spec, catalogue, config, state, work.failed, started)
    if work.failed is not None:
        raise work.failed
    if work.snap is None:  # not reached: a session always gets `needed`, or this raised
        raise RuntimeError("the probe worker returned no snapshot")
    ev = evaluate(work.snap, catalogue, config, selection, state)
    return TargetResult(
        spec, work.snap, ev, stats=work.stats, seconds=time.perf_counter() - started
    )


def contained_probe_target(
    spec: TargetSpec,
    catalogue: dict[str, Rule],
    config: Config,
    selection: Selection,
    overlap: bool = False,
) -> TargetResult:
    """probe_target for `audit`, with a bug anywhere in it reported against this target only
    (the daemon contains each cycle itself)."""
    started = time.perf_counter()
    try:
        return probe_target(spec, catalogue, config, selection, overlap=overlap)
    except Exception as exc:  # one target's bug must not lose the others
        log.exception("audit of %s failed", spec.name)
        err = TargetError(spec.name, scrub(f"internal error: {type(exc).__name__}: {exc}", spec))
        return _unreachable(spec, catalogue, config, None, err, started)


_SHARE_KEYS: dict[tuple[str, str], str] = {}  # (url, engine) -> share_key, parsed once


def share_key(spec: TargetSpec) -> str:
    """Server-wide results are shared by targets of one server seen as one user (what a role
    may see differs)."""
    hit = _SHARE_KEYS.get((spec.url, spec.engine))
    if hit is not None:
        return hit
    if len(_SHARE_KEYS) > 100_000:  # reloads with other URLs: start over
        _SHARE_KEYS.clear()
    key = _SHARE_KEYS[(spec.url, spec.engine)] = _share_key(spec)
    return key


def _share_key(spec: TargetSpec) -> str:
    try:
        user = url_parts(spec.url)[0]["user"] or ""
    except ValueError:
        user = ""
    return f"{server_key(spec)}|{user}"


def _unreachable(
    spec: TargetSpec,
    catalogue: dict[str, Rule],
    config: Config,
    state: History | None,
    exc: TargetError,
    started: float,
) -> TargetResult:
    snap = unreachable_snapshot(spec.name, spec.engine, exc)
    ev = evaluate(snap, catalogue, config, Selection(), state)
    return TargetResult(spec, snap, ev, error=exc.detail, seconds=time.perf_counter() - started)


def run_audit(
    specs: list[TargetSpec],
    catalogue: dict[str, Rule],
    config: Config,
    selection: Selection = ALL_RULES,
) -> AuditResult:
    """Targets in parallel, so a dead one (connect timeout) does not delay the others; one
    target in this thread (a cron or Nagios audit: no pool to start)."""
    if not specs:
        return AuditResult([])
    if len(specs) == 1:
        return AuditResult(
            [contained_probe_target(specs[0], catalogue, config, selection, overlap=True)]
        )
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(8, len(specs))) as pool:
        results = list(
            pool.map(lambda s: contained_probe_target(s, catalogue, config, selection), specs)
        )
    return AuditResult(results)
