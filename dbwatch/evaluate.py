"""evaluate(): run the selected rules' checks over a Snapshot and collect Findings.

Rules whose sections are missing are reported as unknown through DW001, never as OK.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import checks
from .catalogue import Rule
from .checks import CheckContext, culprit, first_paragraph, load_checks
from .checks.history import History
from .config import Config, RuleOverride
from .findings import Finding
from .snapshot import ProbeFailure, Snapshot

log = logging.getLogger(__name__)
# dbwatch's own health: produced here for every target, not listed among the rules run
OWN_HEALTH = ("DW001", "DW002")


@dataclass(frozen=True)
class Selection:
    select: tuple[str, ...] = ()  # ID prefixes; empty = all
    ignore: tuple[str, ...] = ()

    def ignores(self, rule_id: str) -> bool:
        return any(rule_id.startswith(p) for p in self.ignore)

    def wants(self, rule_id: str) -> bool:
        if self.select and not any(rule_id.startswith(p) for p in self.select):
            return False
        return not any(rule_id.startswith(p) for p in self.ignore)


@dataclass
class Evaluation:
    findings: list[Finding] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    unknown: dict[str, str] = field(default_factory=dict)  # rule -> why it could not run


# rules_for per (engine, catalogue, config, selection): the same every cycle of a target
# until a reload swaps catalogue and config (held here, so their ids stay theirs)
_RULES: dict[tuple[str, int, int, Selection], tuple[object, object, tuple[Rule, ...]]] = {}


def rules_for(
    engine: str, catalogue: dict[str, Rule], config: Config, selection: Selection
) -> list[Rule]:
    key = (engine, id(catalogue), id(config), selection)
    hit = _RULES.get(key)
    if hit is not None and hit[0] is catalogue and hit[1] is config:
        return list(hit[2])
    out = _rules_for(engine, catalogue, config, selection)
    if len(_RULES) > 64:  # reloads: the old ones go
        _RULES.clear()
    _RULES[key] = (catalogue, config, tuple(out))
    return out


def _rules_for(
    engine: str, catalogue: dict[str, Rule], config: Config, selection: Selection
) -> list[Rule]:
    out = []
    for rule in catalogue.values():
        override = config.rules.get(rule.id)
        if rule.planned or rule.id in OWN_HEALTH or not rule.applies_to(engine):
            continue
        if override is not None and not override.enabled:
            continue
        if selection.wants(rule.id):
            out.append(rule)
    return out


def sections_needed(engine: str, rules: Iterable[Rule]) -> set[str]:
    checks = load_checks()
    needs: set[str] = set()
    for rule in rules:
        chk = checks.get(rule.check)
        if chk is not None:
            needs.update(chk.probes_for(engine))
    return needs | culprit.sections_for(engine, (r.id for r in rules))


def _context(
    rule: Rule, snap: Snapshot, override: RuleOverride | None, state: History | None
) -> CheckContext:
    params = dict(rule.params)
    thresholds = rule.thresholds
    if override is not None:
        params.update(override.params)
        thresholds = override.thresholds or thresholds
    return CheckContext(rule=rule, snapshot=snap, thresholds=thresholds, params=params, state=state)


def evaluate(
    snap: Snapshot,
    catalogue: dict[str, Rule],
    config: Config,
    selection: Selection = Selection(),
    state: History | None = None,
) -> Evaluation:
    checks = load_checks()
    result = Evaluation()
    for rule in rules_for(snap.engine, catalogue, config, selection):
        chk = checks.get(rule.check)
        if chk is None:
            result.unknown[rule.id] = f"check {rule.check} is not implemented"
            continue
        missing = [s for s in chk.sections_for(snap.engine) if not snap.has(s)]
        if missing:
            skipped = {g.name for g in snap.gaps if g.kind == "time_budget"}
            why = "not run (time budget)" if set(missing) <= skipped else "failed"
            result.unknown[rule.id] = f"probe {', '.join(missing)} {why}"
            continue
        override = config.rules.get(rule.id)
        try:
            found = list(chk.fn(_context(rule, snap, override, state)))
        except Exception as exc:  # a check bug must not hide the other rules
            log.exception("check %s failed on %s", rule.check, snap.target)
            result.unknown[rule.id] = f"check {rule.check} raised {type(exc).__name__}: {exc}"
            continue
        result.ran.append(rule.id)
        result.findings.extend(_unignored(culprit.enrich(found, snap), override))
    # what dbwatch could not read or examine is said whatever --select chose; only --ignore
    # (or `enabled = false`) silences it
    if not selection.ignores("DW001"):
        result.findings.extend(probe_failures(snap, catalogue, result.unknown))
    if not selection.ignores("DW002"):
        result.findings.extend(coverage(snap, catalogue, config, state))
    return result


def coverage(
    snap: Snapshot, catalogue: dict[str, Rule], config: Config, state: History | None
) -> list[Finding]:
    """DW002: like DW001 it is about dbwatch's own view, so it runs whatever else was selected."""
    rule, chk = catalogue.get("DW002"), load_checks().get("incomplete_coverage")
    override = config.rules.get("DW002")
    if rule is None or chk is None or (override is not None and not override.enabled):
        return []
    return _unignored(list(chk.fn(_context(rule, snap, override, state))), override)


def _unignored(found: list[Finding], override: RuleOverride | None) -> list[Finding]:
    if override is None or not override.ignore:
        return found
    pats = [re.compile(p) for p in override.ignore]
    return [f for f in found if not any(p.search(f.subject) for p in pats)]


def probe_failures(
    snap: Snapshot, catalogue: dict[str, Rule], unknown: dict[str, str]
) -> list[Finding]:
    """DW001: one finding per failed probe — or one per missing grant when several probes were
    refused for the same privilege — naming the rules left unknown and what fixes it."""
    rule = catalogue.get("DW001")
    fix_default = first_paragraph(rule.fix) if rule else ""
    template = rule.summary if rule else "{problem}: {error}"
    out = []
    refused: dict[str, list[ProbeFailure]] = {}
    for f in snap.failures:
        if f.privilege and f.grant and f.probe != "connect":
            refused.setdefault(f.grant, []).append(f)
            continue
        affected = _affected(unknown, [f.probe])
        if f.probe == "connect":
            summary = checks.render(template, {"problem": "target unreachable", "error": f.message})
            severity, fix = (
                "critical",
                "Check the URL, network, credentials and that the server is up.",
            )
        else:
            problem = f"probe {f.probe} failed"
            summary = checks.render(template, {"problem": problem, "error": f.message})
            severity, fix = "warning", f.fix or f.grant or fix_default
        out.append(
            _dw001(
                snap, f"probe {f.probe}", summary, severity, fix, [f], affected, identity=f.probe
            )
        )
    for grant, fails in refused.items():
        probes = [f.probe for f in fails]
        affected = _affected(unknown, probes)
        problem = f"probe{'s' if len(probes) > 1 else ''} {', '.join(probes)} refused or partial"
        summary = checks.render(template, {"problem": problem, "error": fails[0].message})
        subject = (
            f"probe {probes[0]}" if len(probes) == 1 else f"privilege for {len(probes)} probes"
        )
        out.append(
            _dw001(
                snap, subject, summary, "warning", grant, fails, affected, identity=["grant", grant]
            )
        )
    return out


def _affected(unknown: dict[str, str], probes: list[str]) -> list[str]:
    return sorted(r for r, why in unknown.items() if any(p in why for p in probes))


def _dw001(
    snap: Snapshot,
    subject: str,
    summary: str,
    severity: str,
    fix: str,
    fails: list[ProbeFailure],
    affected: list[str],
    identity: object,
) -> Finding:
    if affected:
        summary += f" (unknown: {', '.join(affected)})"
    return Finding(
        rule="DW001",
        severity=severity,
        target=snap.target,
        subject=subject,
        summary=summary,
        fix=fix,
        evidence={
            "probe": fails[0].probe,
            "probes": [f.probe for f in fails],
            "error": fails[0].message,
            "grant": fails[0].grant,
            "rules_unknown": affected,
        },
        identity=identity,
    )
