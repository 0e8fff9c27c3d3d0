"""One audit pass: open each target, run the probes its rules need, evaluate, close."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterable
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
    stats = ProbeStats()
    try:
        conn, reused = pool.checkout(spec) if pool is not None else (open_target(spec), False)
    except TargetError as exc:
        return _unreachable(spec, catalogue, config, state, exc, started)
    broken = False
    held: Connection | None = conn
    try:
        rules = plan_rules(conn.flavour, catalogue, config, selection)
        early = sections_known(conn.flavour, rules) if overlap and pool is None else None
        needed = early if early is not None else rules_sections(conn.flavour, rules)
        share = (shared, share_key(spec)) if shared is not None else None
        try:
            if early is not None and cache is None and share is None:
                snap = _probe_while_checks_import(conn, spec.name, early, rules, stats, config)
            else:
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


def _probe_while_checks_import(
    conn: Connection,
    target: str,
    needed: Iterable[str],
    rules: Iterable[Rule],
    stats: ProbeStats,
    config: Config,
) -> Snapshot:
    """run_probes on a worker thread while this one imports the rules' check modules: the
    server's time for the statements (~20 ms on a fresh backend) passes during those imports
    instead of after them. Everything the probes import is imported here first (their
    modules, the sections' families), so the two threads never import the same modules. A
    short switch interval meanwhile: the worker takes each reply at once, not after up to
    5 ms of imports."""
    from .probes.registry import engine_probes
    from .snapshot.sections import section_key

    engine_probes(conn.engine)
    for name in needed:
        section_key(name)
    got: list[Snapshot] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            got.append(run_probes(conn, target, needed, stats, config))
        except BaseException as exc:  # noqa: BLE001 - re-raised by the caller, as it was
            failed.append(exc)

    worker = threading.Thread(target=work, name=f"dbwatch-probe-{target}", daemon=True)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    try:
        worker.start()
        load_checks(r.check for r in rules)
    finally:
        worker.join()
        sys.setswitchinterval(interval)
    if failed:
        raise failed[0]
    return got[0]


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
