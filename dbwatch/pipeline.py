"""One audit pass: open each target, run the probes its rules need, evaluate, close."""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .catalogue import Rule
from .config import Config
from .errors import TargetError
from .evaluate import Evaluation, Selection, evaluate, rules_for, sections_needed
from .findings import Finding, severity_rank
from .probes import ProbeCache, ProbeStats, run_probes, unreachable_snapshot
from .snapshot import Snapshot
from .targets import TargetSpec, open_target

log = logging.getLogger(__name__)
ALL_RULES = Selection()


@dataclass
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

    def to_dict(self) -> dict[str, Any]:
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


@dataclass
class AuditResult:
    targets: list[TargetResult]
    extra_findings: list[Finding] = field(default_factory=list)
    logs: list[dict[str, Any]] = field(default_factory=list)  # `--log` analysis stats
    generated_at: float = field(default_factory=time.time)

    @property
    def findings(self) -> list[Finding]:
        out = [f for t in self.targets for f in t.evaluation.findings] + self.extra_findings
        return sorted(out, key=lambda f: (-severity_rank(f.severity), f.target, f.rule, f.subject))

    @property
    def status(self) -> str:
        """ok | warning | critical | unknown (a target or probe could not be read)."""
        if any(f.rule == "DW001" for f in self.findings) or any(t.error for t in self.targets):
            return "unknown"
        worst = max((severity_rank(f.severity) for f in self.findings), default=0)
        return {0: "ok", 1: "warning", 2: "critical"}.get(worst, "unknown")

    @property
    def exit_code(self) -> int:
        return {"ok": 0, "warning": 1, "critical": 2, "unknown": 3}[self.status]


def probe_target(
    spec: TargetSpec,
    catalogue: dict[str, Rule],
    config: Config,
    selection: Selection,
    state: Any = None,
    cache: ProbeCache | None = None,
) -> TargetResult:
    started = time.perf_counter()
    stats = ProbeStats()
    try:
        conn = open_target(spec)
    except TargetError as exc:
        snap = unreachable_snapshot(spec.name, spec.engine, exc)
        ev = evaluate(snap, catalogue, config, Selection(), state)
        return TargetResult(spec, snap, ev, error=exc.detail, seconds=time.perf_counter() - started)
    try:
        rules = rules_for(conn.flavour, catalogue, config, selection)
        snap = run_probes(
            conn, spec.name, sections_needed(conn.flavour, rules), stats, config, cache
        )
    except TargetError as exc:
        snap = unreachable_snapshot(spec.name, spec.engine, exc)
        ev = evaluate(snap, catalogue, config, Selection(), state)
        return TargetResult(spec, snap, ev, error=exc.detail, seconds=time.perf_counter() - started)
    finally:
        conn.close()
    ev = evaluate(snap, catalogue, config, selection, state)
    return TargetResult(spec, snap, ev, stats=stats, seconds=time.perf_counter() - started)


def run_audit(
    specs: list[TargetSpec],
    catalogue: dict[str, Rule],
    config: Config,
    selection: Selection = ALL_RULES,
) -> AuditResult:
    """Targets in parallel, so a dead one (connect timeout) does not delay the others."""
    if not specs:
        return AuditResult([])
    with ThreadPoolExecutor(max_workers=min(8, len(specs))) as pool:
        results = list(pool.map(lambda s: probe_target(s, catalogue, config, selection), specs))
    return AuditResult(results)
