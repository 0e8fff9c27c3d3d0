"""Rule test cases as data (issue 13 point 4), the way sqlfluff keeps std_rule_cases/.

One file per rule, tests/rule_cases/<ID>.yaml: each case gives snapshot sections (and
optionally failures, features, parameter overrides) and the findings expected — rule fires
or not, severity, subject and key evidence. Fix texts are deliberately not asserted. Every
finding's summary must be its rule file's `summary` template rendered (the literal text between
the fields, in order), so the TOML is the one place a rule's headline is written.
Adding a rule means its TOML, its check and its cases: the meta-test below enforces it.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbwatch.catalogue import load_catalogue
from dbwatch.config import Config, RuleOverride
from dbwatch.evaluate import Selection, evaluate
from dbwatch.snapshot import CoverageGap, ProbeFailure, Snapshot

CASES = Path(__file__).parent / "rule_cases"
CATALOGUE = load_catalogue()
VERSIONS = {
    "postgresql": ("15.4", 150004),
    "mysql": ("8.0.36", 80036),
    "mariadb": ("10.11.6-MariaDB", 101106),
}


def _load(rule_id: str) -> list[dict[str, Any]]:
    data = yaml.safe_load((CASES / f"{rule_id}.yaml").read_text(encoding="utf-8"))
    assert data["rule"] == rule_id
    return list(data["cases"])


def _all_cases() -> list[Any]:
    out = []
    for path in sorted(CASES.glob("*.yaml")):
        for case in _load(path.stem):
            out.append(pytest.param(path.stem, case, id=f"{path.stem}-{case['name']}"))
    return out


def _snapshot(case: dict[str, Any]) -> Snapshot:
    engine = case.get("engine", "postgresql")
    version, num = VERSIONS[engine]
    return Snapshot(
        target="case",
        engine=engine,
        server_version=str(case.get("server_version", version)),
        version_num=int(case.get("version_num", num)),
        taken_at=1_800_000_000.0,
        sections=dict(case.get("sections") or {}),
        failures=tuple(ProbeFailure(**f) for f in case.get("failures") or ()),
        features=frozenset(case.get("features") or ()),
        gaps=tuple(CoverageGap(**g) for g in case.get("gaps") or ()),
    )


def _config(rule_id: str, case: dict[str, Any]) -> Config:
    if not case.get("params"):
        return Config()
    return Config(rules={rule_id: RuleOverride(params=dict(case["params"]))})


def template_chunks(template: str) -> list[str]:
    """The literal text of a summary template, between its {fields}."""
    return [
        lit.strip()
        for lit, _field, _spec, _conv in string.Formatter().parse(template)
        if lit.strip()
    ]


def assert_rendered_from_template(rule_id: str, summary: str) -> None:
    """The rule file is the single source of a rule's text: every finding's summary is its
    TOML template rendered (a check may append detail after it)."""
    pos = 0
    for chunk in template_chunks(CATALOGUE[rule_id].summary):
        found = summary.find(chunk, pos)
        assert found >= 0, (
            f"{rule_id}: summary {summary!r} is not rendered from rules/{rule_id}.toml "
            f"(missing {chunk!r})"
        )
        pos = found + len(chunk)


def _subset(expected: Any, actual: Any, where: str) -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected a mapping, got {actual!r}"
        for key, value in expected.items():
            assert key in actual, f"{where}.{key}: missing from {sorted(actual)}"
            _subset(value, actual[key], f"{where}.{key}")
    else:
        assert actual == expected, f"{where}: expected {expected!r}, got {actual!r}"


@pytest.mark.parametrize("rule_id, case", _all_cases())
def test_rule_case(rule_id: str, case: dict[str, Any]) -> None:
    snap = _snapshot(case)
    result = evaluate(snap, CATALOGUE, _config(rule_id, case), Selection(select=(rule_id,)))
    found = [f for f in result.findings if f.rule == rule_id]
    if case.get("unknown"):
        assert rule_id in result.unknown and not found, result.unknown
        return
    assert rule_id not in result.unknown, result.unknown.get(rule_id)
    expect = case.get("expect") or []
    assert len(found) == len(expect), [f"{f.severity} {f.subject}: {f.summary}" for f in found]
    by_subject = sorted(found, key=lambda f: f.subject)
    for i, (want, got) in enumerate(zip(sorted(expect, key=lambda e: e["subject"]), by_subject)):
        where = f"{rule_id}[{case['name']}] finding {i}"
        assert got.severity == want["severity"], f"{where}: {got.severity} ({got.summary})"
        assert got.subject == want["subject"], where
        for text in want.get("summary_has") or []:
            assert text in got.summary, f"{where}: {text!r} not in {got.summary!r}"
        _subset(want.get("evidence") or {}, got.evidence, f"{where}.evidence")
        assert_rendered_from_template(rule_id, got.summary)
        assert_clean_punctuation(where, got.fix)


def assert_clean_punctuation(where: str, text: str) -> None:
    """Fix texts are joined from parts: no doubled statement terminator where two meet."""
    squeezed = re.sub(r"\s+", "", text)
    assert ";;" not in squeezed, f"{where}: doubled ';' in the fix: {text!r}"


def test_every_rule_has_cases_that_fire_and_cases_that_do_not() -> None:
    missing, one_sided = [], []
    for rule_id, rule in CATALOGUE.items():
        if rule.planned:
            continue
        path = CASES / f"{rule_id}.yaml"
        if not path.exists():
            missing.append(rule_id)
            continue
        cases = _load(rule_id)
        if not any(c.get("expect") for c in cases) or not any(
            not c.get("expect") and not c.get("unknown") for c in cases
        ):
            one_sided.append(rule_id)
    assert not missing, f"rules without tests/rule_cases/<ID>.yaml: {missing}"
    assert not one_sided, f"rules whose cases never fire or always fire: {one_sided}"


def test_case_files_name_known_rules() -> None:
    assert {p.stem for p in CASES.glob("*.yaml")} <= set(CATALOGUE)


# Rules whose summary would still be written somewhere else than their TOML (none now: QU401/
# QU402, made by the query-log analysis, go through catalogue.rule_summary).
NOT_YET_RENDERED: set[str] = set()


def test_every_summary_template_is_rendered_by_its_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule's TOML summary is its headline, not documentation: its check renders it
    (CheckContext.summary, the default of CheckContext.finding, or checks.render) rather than
    writing the text again. Every active rule's cases must render it at least once."""
    import dbwatch.checks as checks_pkg

    rendered: set[str] = set()
    original = checks_pkg.render
    by_template = {rule.summary: rid for rid, rule in CATALOGUE.items()}

    def recording(template: str, fields: dict[str, object]) -> str:
        if template in by_template:
            rendered.add(by_template[template])
        return original(template, fields)

    import dbwatch.catalogue as catalogue_mod

    monkeypatch.setattr(checks_pkg, "render", recording)
    monkeypatch.setattr(catalogue_mod, "render", recording)  # findings made outside a check
    for path in sorted(CASES.glob("*.yaml")):
        for case in _load(path.stem):
            if not case.get("unknown"):
                evaluate(
                    _snapshot(case),
                    CATALOGUE,
                    _config(path.stem, case),
                    Selection(select=(path.stem,)),
                )
    active = {rid for rid, rule in CATALOGUE.items() if not rule.planned}
    unused = sorted(active - rendered - NOT_YET_RENDERED)
    assert not unused, f"summary templates in rules/*.toml never rendered by their check: {unused}"
    stale = sorted(NOT_YET_RENDERED & rendered)
    assert not stale, f"rendered now: remove them from NOT_YET_RENDERED: {stale}"
