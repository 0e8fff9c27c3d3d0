"""Checks: pure functions over a Snapshot, registered by name; a rule file names its check.

A check never does I/O. It receives a CheckContext (the rule, its effective thresholds
and params, the snapshot) and yields Findings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from typing import Literal, TypeAlias

from ..catalogue import Param, Rule, Thresholds
from ..catalogue import render as render  # re-exported: checks.render fills summaries
from ..durations import parse_count, parse_duration
from ..findings import Finding, SessionIdentity
from ..frozen import frozen
from ..registry import Registry
from ..snapshot import Snapshot
from .history import History


@frozen
class CheckContext:
    rule: Rule
    snapshot: Snapshot
    thresholds: Thresholds | None
    params: dict[str, Param]
    state: History | None = None  # the daemon's history; None in one-shot audits
    # rule -> why it could not run, for DW001 (which runs after every other rule)
    unknown: Mapping[str, str] = field(default_factory=dict)

    def grade(self, value: float | None) -> str | None:
        if self.thresholds is None:
            return self.rule.severity if value else None
        return self.thresholds.grade(value)

    def param(self, name: str) -> Param:
        """A rule parameter: the config's override, else the rule file's default — the only
        default there is (a check never writes its own)."""
        try:
            return self.params[name]
        except KeyError:
            raise KeyError(f"{self.rule.id}: parameter {name!r} is not declared in its rule file")

    def strings(self, name: str) -> list[str]:
        """A string-list parameter (names, regexes)."""
        value = self.param(name)
        return list(value) if isinstance(value, list) else []

    def duration(self, name: str) -> float:
        """A duration parameter in seconds; an unparsable override falls back to the default."""
        try:
            return parse_duration(self.param(name))
        except (ValueError, TypeError):
            return parse_duration(self.rule.params[name])

    def count(self, name: str) -> float:
        """A count parameter ('10000', '10k', 500)."""
        try:
            return parse_count(self.param(name))
        except (ValueError, TypeError):
            return parse_count(self.rule.params[name])

    def number(self, name: str) -> float:
        """A plain number parameter (a ratio, seconds as a number)."""
        try:
            return _float(self.param(name))
        except (ValueError, TypeError):
            return _float(self.rule.params[name])

    def summary(self, **fields: object) -> str:
        return render(self.rule.summary, fields)

    def finding(
        self,
        *,
        severity: str,
        subject: str,
        summary: str | None = None,
        fix: str | None = None,
        evidence: dict[str, object] | None = None,
        identity: object = None,
        confidence: str = "high",
        session: SessionIdentity | None = None,
    ) -> Finding:
        ev = dict(evidence or {})
        return Finding(
            rule=self.rule.id,
            severity=severity,
            target=self.snapshot.target,
            subject=subject,
            summary=summary or self.summary(**ev),
            fix=fix or first_paragraph(self.rule.fix),
            evidence=ev,
            identity=identity,
            confidence=confidence,
            session=session,
        )


def _float(value: Param) -> float:
    if isinstance(value, list):
        raise TypeError(f"not a number: {value!r}")
    return float(value)


def first_paragraph(text: str) -> str:
    return " ".join(text.strip().split("\n\n")[0].split())


CheckFn = Callable[[CheckContext], Iterable[Finding]]
# What a pure check's findings are a function of, out of a snapshot (see `pure`): objects
# compared by identity (None: not this time, it reads more), or "sections": every section
# it probes
Inputs: TypeAlias = "Callable[[Snapshot], tuple[object, ...] | None] | Literal['sections']"


@frozen
class Check:
    name: str
    fn: CheckFn
    needs: dict[str, tuple[str, ...]]  # engine -> snapshot sections ("mysql" covers mariadb)
    # engine -> sections read when present (probed too); their failure leaves the rule running
    optional: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # `pure`: what its findings depend on besides the rule and the snapshot's identity fields;
    # None: it reads more (the daemon's history, the clock) and runs every time
    inputs: Inputs | None = None

    def sections_for(self, engine: str) -> tuple[str, ...]:
        key = "mysql" if engine in ("mysql", "mariadb") else engine
        return self.needs.get(key, ())

    def probes_for(self, engine: str) -> tuple[str, ...]:
        """Every section to probe: the required ones, then the optional ones."""
        key = "mysql" if engine in ("mysql", "mariadb") else engine
        return self.sections_for(engine) + self.optional.get(key, ())


# The modules that register checks, in file-name order (a rule family's module is named after
# its rule IDs): imported once, when the registry is first read. tests/test_registry.py fails
# on a module that registers a check and is missing here.
CHECKS: Registry[Check] = Registry(
    "check",
    tuple(
        f"{__name__}.{m}"
        for m in (
            "dw001_probe_failed",
            "dw002_coverage",
            "my101_lock_waits",
            "my102_my201_innodb",
            "pg001_pg002_my001_my002_sessions",
            "pg101_pg102_locks",
            "pg201_pg202_horizon",
            "pg501_my501_settings",
            "qu401_qu402_statements",
            "queue_health",
            "queue_schema",
        )
    ),
)


def check(name: str, **needs: Iterable[str]) -> Callable[[CheckFn], CheckFn]:
    """Register a check; keyword args map engine -> the sections it reads."""

    def deco(fn: CheckFn) -> CheckFn:
        CHECKS.add(name, Check(name, fn, {k: tuple(v) for k, v in needs.items()}))
        return fn

    return deco


def also_reads(**optional: Iterable[str]) -> Callable[[CheckFn], CheckFn]:
    """Above @check: engine -> sections the check uses when they could be read (probed with
    it; their failure never makes the rule unknown)."""

    def deco(fn: CheckFn) -> CheckFn:
        for name, chk in list(CHECKS.registered().items()):
            if chk.fn is fn:
                opt = {k: tuple(v) for k, v in optional.items()}
                CHECKS.replace(name, dataclasses.replace(chk, optional=opt))
        return fn

    return deco


def pure(inputs: Inputs = "sections") -> Callable[[CheckFn], CheckFn]:
    """Above @check (and @also_reads): the check's findings are a function of nothing but
    its rule (with the config's override: thresholds, params), the snapshot's target, engine,
    scope, server version and features, and `inputs(snapshot)` — by default every section
    it probes — whose objects are compared by identity (a section reused unchanged is the
    same object: the daemon's ttl cache, a build of the same rows). It reads no clock, no
    daemon history (`ctx.state`), no other section and no global that changes. `evaluate`
    then gives the findings of the target's last run of the rule while those are the same
    (a rule that reads more must not be marked: it would say what is no longer so). A check
    pure only on some snapshots has `inputs` return None on the others: it runs then."""

    def deco(fn: CheckFn) -> CheckFn:
        for name, chk in list(CHECKS.registered().items()):
            if chk.fn is fn:
                CHECKS.replace(name, dataclasses.replace(chk, inputs=inputs))
        return fn

    return deco


# check name -> the module registering it: an audit imports only the checks its rules name
# (startup cost). tests/test_startup.py checks it against what the modules register; a name
# not listed here loads them all.
CHECK_MODULES: dict[str, str] = {
    "claim_without_skip_locked": "qu401_qu402_statements",
    "dead_tuples": "pg201_pg202_horizon",
    "fetch_before_delete": "qu401_qu402_statements",
    "history_list": "my102_my201_innodb",
    "idle_in_transaction": "pg001_pg002_my001_my002_sessions",
    "incomplete_coverage": "dw002_coverage",
    "innodb_deadlock": "my102_my201_innodb",
    "legacy_queue_index": "queue_schema",
    "long_transaction": "pg001_pg002_my001_my002_sessions",
    "my_lock_waits": "my101_lock_waits",
    "my_settings": "pg501_my501_settings",
    "pg_blocking": "pg101_pg102_locks",
    "pg_deadlocks": "pg101_pg102_locks",
    "pg_settings": "pg501_my501_settings",
    "probe_failed": "dw001_probe_failed",
    "queue_attempts": "queue_health",
    "queue_backlog": "queue_health",
    "queue_expired": "queue_health",
    "queue_failed": "queue_health",
    "xmin_horizon": "pg201_pg202_horizon",
}


# check name -> engine -> every section it probes (Check.probes_for: the required ones, then
# the optional): a one-target audit starts probing while the check modules import
# (pipeline.probe_target). tests/test_startup.py checks it against the registered checks; a
# name not listed here makes the audit import the checks first, as before.
_Reads = dict[str, tuple[str, ...]]
_QUEUES: _Reads = {"postgresql": ("pg.queues",), "mysql": ("my.queues",)}
_STATEMENTS: _Reads = {
    "postgresql": ("pg.statement_digests",),
    "mysql": ("my.statement_history", "my.statement_digests"),
}
_SESSIONS: _Reads = {"postgresql": ("pg.sessions",), "mysql": ("my.trx", "my.lock_waits")}
CHECK_READS: dict[str, _Reads] = {
    "claim_without_skip_locked": _STATEMENTS,
    "dead_tuples": {"postgresql": ("pg.dead_tuples", "pg.horizon", "pg.sessions")},
    "fetch_before_delete": _STATEMENTS,
    "history_list": {"mysql": ("my.innodb_counters", "my.trx")},
    "idle_in_transaction": _SESSIONS,
    "incomplete_coverage": {},
    "innodb_deadlock": {"mysql": ("my.innodb_status", "my.innodb_counters")},
    "legacy_queue_index": {"postgresql": ("pg.queue_indexes",), "mysql": ("my.queue_indexes",)},
    "long_transaction": _SESSIONS,
    "my_lock_waits": {"mysql": ("my.lock_waits",)},
    "my_settings": {"mysql": ("my.settings",)},
    "pg_blocking": {"postgresql": ("pg.sessions",)},
    "pg_deadlocks": {"postgresql": ("pg.deadlocks",)},
    "pg_settings": {"postgresql": ("pg.settings",)},
    "probe_failed": {},
    "queue_attempts": _QUEUES,
    "queue_backlog": _QUEUES,
    "queue_expired": _QUEUES,
    "queue_failed": _QUEUES,
    "xmin_horizon": {"postgresql": ("pg.horizon", "pg.sessions")},
}


def sections_read(engine: str, names: Iterable[str]) -> set[str] | None:
    """The sections the checks `names` probe on `engine`, from CHECK_READS (no check module
    imported); None when one of them is not listed there."""
    key = "mysql" if engine in ("mysql", "mariadb") else engine
    out: set[str] = set()
    for name in names:
        reads = CHECK_READS.get(name)
        if reads is None:
            return None
        out.update(reads.get(key, ()))
    return out


def load_checks(names: Iterable[str] | None = None) -> Mapping[str, Check]:
    """Every registered check (their modules imported once per process, on first call); with
    `names`, at least those that exist, importing only the modules registering them."""
    if names is None or CHECKS.loaded:
        return CHECKS.load()
    wanted = set(names)
    if not wanted <= CHECK_MODULES.keys():
        return CHECKS.load()
    return CHECKS.load_only(sorted({f"{__name__}.{CHECK_MODULES[n]}" for n in wanted}))
