"""evaluate(): run the selected rules' checks over a Snapshot and collect Findings.

Rules whose sections are missing are reported as unknown through DW001, never as OK.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from operator import is_
from types import ModuleType

from .catalogue import Rule
from .checks import Check, CheckContext, culprit_rules, load_checks, sections_read
from .checks.history import History
from .config import Config, RuleOverride
from .findings import Finding
from .frozen import frozen, mutable
from .snapshot import Snapshot

log = logging.getLogger(__name__)
# dbwatch's own health: produced here for every target, not listed among the rules run
OWN_HEALTH = ("DW001", "DW002")


@frozen
class Selection:
    select: tuple[str, ...] = ()  # ID prefixes; empty = all
    ignore: tuple[str, ...] = ()

    def ignores(self, rule_id: str) -> bool:
        return bool(self.ignore) and any(rule_id.startswith(p) for p in self.ignore)

    def wants(self, rule_id: str) -> bool:
        if self.select and not any(rule_id.startswith(p) for p in self.select):
            return False
        return not any(rule_id.startswith(p) for p in self.ignore)


EVERY_RULE = Selection()  # the default selection (a module-level instance: ruff B008)


@mutable
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
    return list(_rules(engine, catalogue, config, selection))


def _rules(
    engine: str, catalogue: dict[str, Rule], config: Config, selection: Selection
) -> tuple[Rule, ...]:
    key = (engine, id(catalogue), id(config), selection)
    hit = _RULES.get(key)
    if hit is not None and hit[0] is catalogue and hit[1] is config:
        return hit[2]
    out = tuple(_rules_for(engine, catalogue, config, selection))
    if len(_RULES) > 64:  # reloads: the old ones go
        _RULES.clear()
    _RULES[key] = (catalogue, config, out)
    return out


# A list of rules' checks, per (engine, the rules' identities): load_checks walked the rules'
# check names and module list four times per cycle. What is kept is the registry's own live
# mapping (load_checks returns it), so a check registered or replaced later is still seen;
# the rules are held so their ids stay theirs.
_CHECKS: dict[tuple[int, ...], tuple[tuple[Rule, ...], Mapping[str, Check]]] = {}
_NEEDED: dict[tuple[str, tuple[int, ...]], tuple[tuple[Rule, ...], frozenset[str]]] = {}


def _checks(rules: tuple[Rule, ...]) -> Mapping[str, Check]:
    key = tuple(map(id, rules))
    hit = _CHECKS.get(key)
    if hit is not None:
        return hit[1]
    checks = load_checks(r.check for r in rules)
    if len(_CHECKS) > 64:
        _CHECKS.clear()
    _CHECKS[key] = (rules, checks)
    return checks


def _own_check(name: str) -> Check | None:
    """DW001's and DW002's check (the registry's live mapping, looked up once per name)."""
    mapping = _OWN.get(name)
    if mapping is None:
        mapping = _OWN[name] = load_checks([name])
    return mapping.get(name)


_OWN: dict[str, Mapping[str, Check]] = {}
_OWN_MODULES: dict[str, ModuleType] = {}


def _own_module(name: str) -> ModuleType:
    """dbwatch.checks.<name>, imported once (an import statement per call walked importlib's
    fromlist handling twice a cycle)."""
    mod = _OWN_MODULES.get(name)
    if mod is None:
        mod = _OWN_MODULES[name] = importlib.import_module(f"{__package__}.checks.{name}")
    return mod


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
    """The sections the rules read (every cycle of a target the same rules: kept per engine
    and rules)."""
    got = tuple(rules)
    key = (engine, tuple(map(id, got)))
    hit = _NEEDED.get(key)
    if hit is not None:
        return set(hit[1])
    checks = _checks(got)
    needs: set[str] = set()
    for rule in got:
        chk = checks.get(rule.check)
        if chk is not None:
            needs.update(chk.probes_for(engine))
    needs |= culprit_rules.sections_for(engine, (r.id for r in got))
    if all(r.check in checks for r in got):  # a check not implemented yet may come later
        if len(_NEEDED) > 64:
            _NEEDED.clear()
        _NEEDED[key] = (got, frozenset(needs))
    return needs


def sections_known(engine: str, rules: Iterable[Rule]) -> set[str] | None:
    """sections_needed without importing a check module (checks.CHECK_READS); None when a
    rule's check is not listed there."""
    rules = list(rules)
    needs = sections_read(engine, (r.check for r in rules))
    if needs is None:
        return None
    return needs | culprit_rules.sections_for(engine, (r.id for r in rules))


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
    selection: Selection = EVERY_RULE,
    state: History | None = None,
) -> Evaluation:
    engine = snap.engine
    rules, steps = _plan(engine, catalogue, config, selection)
    checks = _checks(rules)
    sections = snap.sections
    section = sections.get  # Snapshot.has: a section not None
    # the sections read (not None), once: each rule's needs are then one subset test
    present = {name for name, data in sections.items() if data is not None}
    memo = _memo(snap)
    result = Evaluation()
    ran, findings = result.ran, result.findings
    for step in steps:
        rule = step.rule
        chk = checks.get(rule.check)
        if chk is None:
            result.unknown[rule.id] = f"check {rule.check} is not implemented"
            continue
        if chk is not step.chk:  # registered (or replaced) since the plan was made
            step = _Step(rule, step.override, chk, engine)
        if not step.need_set <= present:
            missing = [s for s in step.needs if section(s) is None]
            skipped = {g.name for g in snap.gaps if g.kind == "time_budget"}
            why = "not run (time budget)" if set(missing) <= skipped else "failed"
            result.unknown[rule.id] = f"probe {', '.join(missing)} {why}"
            continue
        inputs = step.inputs
        if type(inputs) is tuple:  # pure on its sections: the memo checked here, no call
            last = memo.get(rule.id)
            if last is not None:
                kept = last[0]
                if (
                    len(kept) == len(inputs) + 3
                    and kept[0] is chk
                    and kept[1] is rule
                    and kept[2] is step.override
                    and all(map(is_, kept[3:], map(section, inputs)))
                ):
                    ran.append(rule.id)
                    if last[1]:
                        findings.extend(_unignored(_enrich(list(last[1]), snap), step.override))
                    continue
        try:
            found = _run(step, snap, state, memo)
        except Exception as exc:  # a check bug must not hide the other rules
            log.exception("check %s failed on %s", rule.check, snap.target)
            result.unknown[rule.id] = f"check {rule.check} raised {type(exc).__name__}: {exc}"
            continue
        ran.append(rule.id)
        if found:
            findings.extend(_unignored(_enrich(found, snap), step.override))
    # what dbwatch could not read or examine is said whatever --select chose; only --ignore
    # (or `enabled = false`) silences it
    if not selection.ignores("DW001"):
        result.findings.extend(probe_failures(snap, catalogue, result.unknown))
    if not selection.ignores("DW002"):
        result.findings.extend(coverage(snap, catalogue, config, state))
    return result


class _Step:
    """One rule of a rule set as every cycle runs it, worked out once: its override, its
    effective params and thresholds, its check, the sections it needs and what a pure
    check's findings depend on (`Check.inputs`: a function, or the names of its sections).
    Shared by the threads evaluating targets; never changed."""

    __slots__ = ("chk", "inputs", "need_set", "needs", "override", "params", "rule", "thresholds")

    def __init__(
        self, rule: Rule, override: RuleOverride | None, chk: Check | None, engine: str
    ) -> None:
        self.rule, self.override, self.chk = rule, override, chk
        params = dict(rule.params)
        thresholds = rule.thresholds
        if override is not None:
            params.update(override.params)
            thresholds = override.thresholds or thresholds
        self.params, self.thresholds = params, thresholds
        self.needs: tuple[str, ...] = chk.sections_for(engine) if chk is not None else ()
        self.need_set = frozenset(self.needs)
        self.inputs: Callable[[Snapshot], tuple[object, ...] | None] | tuple[str, ...] | None
        self.inputs = None
        if chk is not None and chk.inputs is not None:
            self.inputs = chk.probes_for(engine) if chk.inputs == "sections" else chk.inputs


# the steps per (engine, catalogue, config, selection), like _RULES: until a reload
_PLANS: dict[
    tuple[str, int, int, Selection],
    tuple[object, object, tuple[Rule, ...], tuple[_Step, ...]],
] = {}


# the same by the selection's identity too (the daemon passes one Selection object every
# cycle: no dataclass __hash__/__eq__ per lookup); the objects are held and compared
_PLANS_BY_ID: dict[
    tuple[str, int, int, int],
    tuple[object, object, Selection, tuple[Rule, ...], tuple[_Step, ...]],
] = {}


def _plan(
    engine: str, catalogue: dict[str, Rule], config: Config, selection: Selection
) -> tuple[tuple[Rule, ...], tuple[_Step, ...]]:
    fast = (engine, id(catalogue), id(config), id(selection))
    got = _PLANS_BY_ID.get(fast)
    if got is not None and got[0] is catalogue and got[1] is config and got[2] is selection:
        return got[3], got[4]
    rules, steps = _plan_by_value(engine, catalogue, config, selection)
    if len(_PLANS_BY_ID) > 64:
        _PLANS_BY_ID.clear()
    _PLANS_BY_ID[fast] = (catalogue, config, selection, rules, steps)
    return rules, steps


def plan_rules(
    engine: str, catalogue: dict[str, Rule], config: Config, selection: Selection
) -> tuple[Rule, ...]:
    """rules_for as the kept tuple (the same object every cycle until a reload). Imports no
    check module (the plan's steps do): a one-target audit probes while they import."""
    got = _PLANS_BY_ID.get((engine, id(catalogue), id(config), id(selection)))
    if got is not None and got[0] is catalogue and got[1] is config and got[2] is selection:
        return got[3]
    return _rules(engine, catalogue, config, selection)


# the sections a kept rules tuple reads, by the tuple's identity (held)
_SECTIONS: dict[tuple[str, int], tuple[tuple[Rule, ...], frozenset[str]]] = {}


def rules_sections(engine: str, rules: tuple[Rule, ...]) -> frozenset[str]:
    """sections_needed of a rules tuple from plan_rules, kept with it (no set rebuilt and no
    tuple of the rules' ids hashed per cycle)."""
    hit = _SECTIONS.get((engine, id(rules)))
    if hit is not None and hit[0] is rules:
        return hit[1]
    out = frozenset(sections_needed(engine, rules))
    if all(r.check in _checks(rules) for r in rules):  # as sections_needed: all implemented
        if len(_SECTIONS) > 64:
            _SECTIONS.clear()
        _SECTIONS[(engine, id(rules))] = (rules, out)
    return out


def _plan_by_value(
    engine: str, catalogue: dict[str, Rule], config: Config, selection: Selection
) -> tuple[tuple[Rule, ...], tuple[_Step, ...]]:
    key = (engine, id(catalogue), id(config), selection)
    hit = _PLANS.get(key)
    if hit is not None and hit[0] is catalogue and hit[1] is config:
        return hit[2], hit[3]
    rules = _rules(engine, catalogue, config, selection)
    checks = _checks(rules)
    steps = tuple(_Step(r, config.rules.get(r.id), checks.get(r.check), engine) for r in rules)
    if len(_PLANS) > 64:
        _PLANS.clear()
    _PLANS[key] = (catalogue, config, rules, steps)
    return rules, steps


def _memo(snap: Snapshot) -> dict[str, tuple[tuple[object, ...], tuple[Finding, ...]]]:
    """The target's pure-rule memo (rule id -> what its last run read, by identity, and what
    it found), valid for the snapshot's engine, scope, version and features: compared once
    per evaluation, and the memo starts empty when any of them changed."""
    values = (snap.engine, snap.scope, snap.version_num, snap.server_version, snap.features)
    last = _LAST.get(snap.target)
    if last is not None and last[0] == values:
        return last[1]
    if len(_LAST) > 100_000:  # targets come and go with reloads
        _LAST.clear()
    memo: dict[str, tuple[tuple[object, ...], tuple[Finding, ...]]] = {}
    _LAST[snap.target] = (values, memo)
    return memo


def _run(
    step: _Step,
    snap: Snapshot,
    state: History | None,
    memo: dict[str, tuple[tuple[object, ...], tuple[Finding, ...]]] | None = None,
) -> list[Finding]:
    """The check's findings; a pure check's (Check.inputs) are its last run's on this target
    while everything they depend on is the same: the check, the rule and its override (the
    same objects until a reload), the snapshot's engine, scope, version and features (`_memo`),
    and its inputs (by identity, held here so no new object can take an old one's id)."""
    chk = step.chk
    assert chk is not None
    inputs = step.inputs
    if inputs is None:
        return list(chk.fn(_ctx(step, snap, state)))
    if type(inputs) is tuple:
        reads = (chk, step.rule, step.override, *map(snap.sections.get, inputs))
    else:
        got = inputs(snap)  # type: ignore[operator]
        if got is None:  # not pure on this snapshot
            return list(chk.fn(_ctx(step, snap, state)))
        reads = (chk, step.rule, step.override, *got)
    if memo is None:
        memo = _memo(snap)
    last = memo.get(step.rule.id)
    if last is not None and _same(last[0], reads):
        return list(last[1])
    found = list(chk.fn(_ctx(step, snap, state)))
    memo[step.rule.id] = (reads, tuple(found))
    return found


def _same(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    return len(a) == len(b) and all(map(is_, a, b))


def _ctx(step: _Step, snap: Snapshot, state: History | None) -> CheckContext:
    return CheckContext(step.rule, snap, step.thresholds, step.params, state)


# target -> (the snapshot's values the memo holds for; rule id -> (what the rule's last run
# read, by identity; what it found))
_LAST: dict[
    str,
    tuple[tuple[object, ...], dict[str, tuple[tuple[object, ...], tuple[Finding, ...]]]],
] = {}


def _enrich(found: list[Finding], snap: Snapshot) -> list[Finding]:
    """Session findings name their culprit (`checks.culprit`, imported only when needed)."""
    enriched = culprit_rules.enriched
    if not any(enriched(f.rule) for f in found):
        return found
    from .checks import culprit

    return culprit.enrich(found, snap)


def probe_failures(
    snap: Snapshot, catalogue: dict[str, Rule], unknown: dict[str, str]
) -> list[Finding]:
    """DW001 through its registered check (config overrides do not apply: what dbwatch could
    not read is always said); a catalogue without DW001 still gets the findings."""
    rule, chk = catalogue.get("DW001"), _own_check("probe_failed")
    dw001_probe_failed = _own_module("dw001_probe_failed")
    if rule is None or chk is None:
        got: list[Finding] = dw001_probe_failed.findings(snap, None, unknown)
        return got
    if not snap.failures and chk.fn is dw001_probe_failed.probe_failed:
        return []  # its findings are the snapshot's failures': none (every idle cycle)
    ctx = CheckContext(
        rule=rule,
        snapshot=snap,
        thresholds=rule.thresholds,
        params=dict(rule.params),
        unknown=unknown,
    )
    return list(chk.fn(ctx))


def coverage(
    snap: Snapshot, catalogue: dict[str, Rule], config: Config, state: History | None
) -> list[Finding]:
    """DW002: like DW001 it is about dbwatch's own view, so it runs whatever else was selected."""
    rule, chk = catalogue.get("DW002"), _own_check("incomplete_coverage")
    override = config.rules.get("DW002")
    if rule is None or chk is None or (override is not None and not override.enabled):
        return []
    dw002_coverage = _own_module("dw002_coverage")
    if not snap.gaps and chk.fn is dw002_coverage.incomplete_coverage:
        return []  # its one finding is the snapshot's gaps': none (every idle cycle)
    return _unignored(list(chk.fn(_context(rule, snap, override, state))), override)


def _unignored(found: list[Finding], override: RuleOverride | None) -> list[Finding]:
    if override is None or not override.ignore:
        return found
    pats = [re.compile(p) for p in override.ignore]
    return [f for f in found if not any(p.search(f.subject) for p in pats)]
