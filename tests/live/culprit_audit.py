"""Helpers for the culprit tests (issue 23): audit one target in-process with low thresholds,
wait for a session to reach a state, pick a finding by pid/thread."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from dbwatch.catalogue import Thresholds, load_catalogue
from dbwatch.config import Config, RuleOverride
from dbwatch.evaluate import Selection
from dbwatch.findings import Finding
from dbwatch.pipeline import TargetResult, probe_target
from dbwatch.probes import ProbeCache
from dbwatch.targets import spec_for

CATALOGUE = load_catalogue()
LOW = Thresholds("duration", 1.0, 3600.0)
SESSION_RULES = ("PG001", "PG002", "PG101", "MY001", "MY002", "MY101")


def audit(url: str, rules: tuple[str, ...] = SESSION_RULES,
          cache: ProbeCache | None = None) -> TargetResult:
    config = Config(rules={r: RuleOverride(thresholds=LOW) for r in rules})
    res = probe_target(spec_for(url), CATALOGUE, config, Selection(rules), cache=cache)
    assert res.error is None, res.error
    return res


def findings_for(res: TargetResult, key: str, ident: int) -> list[Finding]:
    """The findings whose evidence names this pid / thread (key 'pid' or 'thread_id')."""
    return [f for f in res.evaluation.findings if f.evidence.get(key) == ident]


def wait_until(cond: Callable[[], Any], timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.1)


def origin(f: Finding) -> dict[str, Any]:
    o = f.evidence.get("origin")
    assert isinstance(o, dict), f.evidence
    return o


def txn(f: Finding) -> dict[str, Any]:
    t = f.evidence.get("transaction")
    assert isinstance(t, dict), f.evidence
    return t
