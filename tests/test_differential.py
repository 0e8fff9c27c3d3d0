"""Behaviour unchanged (issue 25.7): every recorded command line and every live scenario audit
gives the committed golden output (tests/fixtures/differential/), exit code included.

A failure here means an output changed. If the change is meant, regenerate explicitly and say
so in the commit: `PYTHONPATH=. python tests/differential.py --write --live` (see its docstring).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from differential import GOLDEN, Case, cases, golden_path, history_cases, run_case
from differential_live import SCENARIOS, live_name, run_scenario

CASES = cases()


def _expected(name: str) -> str:
    path = golden_path(name)
    assert path.exists(), f"no golden file {path.name}: regenerate with tests/differential.py"
    return path.read_text()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_recorded_input(case: Case) -> None:
    assert run_case(case) == _expected(case.name)


@pytest.mark.parametrize("key", list(SCENARIOS))
def test_live_scenario(key: str) -> None:
    assert run_scenario(key) == _expected(live_name(key))


def test_deadlock_history_of_every_version(tmp_path: Path) -> None:
    """`deadlocks --history` over records stored by older versions and by this one."""
    found = history_cases(tmp_path)
    assert len(found) == 3
    for name, text in found.items():
        assert text == _expected(name), name


def test_every_golden_file_has_its_case(tmp_path: Path) -> None:
    """A golden file no case produces is a case that was dropped: say so, do not keep it."""
    names = {c.name for c in CASES} | {live_name(k) for k in SCENARIOS}
    names |= set(history_cases(tmp_path))
    stale = sorted(p.stem for p in GOLDEN.glob("*.txt") if p.stem not in names)
    corpus_missing = not any(c.needs_corpus for c in CASES)
    if corpus_missing:  # the corpus cases are not listed without the corpus
        stale = [s for s in stale if not s.startswith("deadlocks_--file_innodb-status_")]
    assert stale == []


def test_the_recorded_set_is_the_differential_scripts() -> None:
    """contrib/differential.sh ran 108 command lines over the recorded inputs and the corpus."""
    if not any(c.needs_corpus for c in CASES):
        pytest.skip("external corpus not found (set DBWATCH_CORPUS)")
    assert len(CASES) == 108
