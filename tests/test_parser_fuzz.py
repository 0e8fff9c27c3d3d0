"""Property tests: the parsers never raise on truncated, shuffled or random text."""
from __future__ import annotations

import json
from pathlib import Path

from conftest import CORPUS as SHARED_CORPUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbwatch.deadlocks.diagnosis import diagnose
from dbwatch.parsers.errorlog import iter_deadlocks
from dbwatch.parsers.innodb_status import parse_status

CORPUS = SHARED_CORPUS / "innodb-status"
FIX = Path(__file__).parent / "fixtures" / "innodb"
SAMPLES = [p.read_text(encoding="utf-8", errors="replace")
           for p in sorted(CORPUS.glob("*deadlock*")) + sorted(CORPUS.glob("mariadb*"))
           + sorted(FIX.glob("*")) + sorted(FIX.glob("variants/*")) if p.is_file()]
LINES = [ln for s in SAMPLES for ln in s.splitlines()]
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check(text: str) -> None:
    st_ = parse_status(text)
    json.dumps(st_.to_dict())
    if st_.deadlock is not None:
        json.dumps(st_.deadlock.to_dict())
        diagnose(st_.deadlock).to_dict()
    for dl in iter_deadlocks(text.splitlines()):
        diagnose(dl)


@FUZZ
@given(st.sampled_from(SAMPLES), st.integers(min_value=0, max_value=200_000))
def test_truncated(text: str, cut: int) -> None:
    check(text[:cut])


@FUZZ
@given(st.lists(st.sampled_from(LINES), max_size=300))
def test_shuffled_lines(lines: list[str]) -> None:
    check("\n".join(lines))


@FUZZ
@given(st.text(max_size=3000))
def test_random_text(text: str) -> None:
    check(text)


@FUZZ
@given(st.lists(st.one_of(st.sampled_from(LINES), st.text(max_size=80)), max_size=200))
def test_mixed_lines(lines: list[str]) -> None:
    check("\n".join(lines))
