"""The typed DeadlockRecord (issue 25.3): to_json/from_json round trips, key order included,
for every recorded input and for the records older versions stored in the state; the latest
deadlock of a snapshot is diagnosed once and shared (MY102 and the daemon's journal)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from dbwatch.catalogue import load_catalogue
from dbwatch.config import Config
from dbwatch.daemon.dispatch import record_deadlocks
from dbwatch.daemon.state import State
from dbwatch.deadlocks import record as record_mod
from dbwatch.deadlocks.record import deadlock_record, latest_deadlock
from dbwatch.deadlocks.sources import ReadStats, read_log, read_status_file
from dbwatch.evaluate import Selection, evaluate
from dbwatch.parsers.deadlock_model import Deadlock
from dbwatch.parsers.innodb_status import parse_status
from dbwatch.pipeline import TargetResult
from dbwatch.records import DeadlockRecord, Diagnosis
from dbwatch.snapshot import Snapshot
from dbwatch.snapshot.my import InnodbStatusSection
from dbwatch.targets import TargetSpec

FIX = Path(__file__).parent / "fixtures"
OLDER = FIX / "state" / "deadlock-records-by-version.json"
INPUTS = sorted(
    [*FIX.glob("innodb/*.*"), *FIX.glob("innodb/published/*"), *FIX.glob("innodb/variants/*"),
     *FIX.glob("pglog/*.*"), *FIX.glob("pglog/published/*")]
)


def _records(path: Path) -> list[DeadlockRecord]:
    if path.suffix == ".txt" and "published" not in path.parts and "variants" not in path.parts:
        return read_status_file(str(path), ReadStats())
    return list(read_log(str(path), ReadStats()))


@pytest.mark.parametrize("path", INPUTS, ids=[p.name for p in INPUTS])
def test_round_trip_through_the_state_text(path: Path) -> None:
    for rec in _records(path):
        doc = rec.to_json()
        stored = json.dumps(doc, sort_keys=True)  # what the journal writes
        back = DeadlockRecord.from_json(json.loads(stored))
        assert back == rec
        # the same JSON, in the same key order
        assert json.dumps(back.to_json()) == json.dumps(doc)


def test_every_optional_key_round_trips() -> None:
    """What the recorded inputs rarely hold (an inferred victim, an ambiguous structure,
    unparsed lines, ...) set on a parsed deadlock: each key comes back, in its place."""
    text = (FIX / "innodb" / "mariadb-laravel-queue-index.txt").read_text()
    dl = parse_status(text).deadlock
    assert dl is not None
    variants = [
        dataclasses.replace(dl, victim_source="weight", printed_victim=0),
        dataclasses.replace(dl, victim_source="too-deep", too_deep=True),
        dataclasses.replace(dl, ambiguous="two readings", unverified=("*** (1) TRANSACTION:",),
                            victim=None, victim_source="none"),
        dataclasses.replace(dl, truncated=True, unparsed=("?? line",), inconsistencies=("x",)),
    ]
    seen: set[str] = set()
    for v in variants:
        rec = deadlock_record(v).tagged(source="log_file", target="maria")
        doc = rec.to_json()
        seen |= set(doc)
        back = DeadlockRecord.from_json(json.loads(json.dumps(doc, sort_keys=True)))
        assert back == rec and json.dumps(back.to_json()) == json.dumps(doc)
    assert {"victim_inferred", "victim_evidence", "ambiguous", "ambiguity", "truncated",
            "unverified", "unparsed", "inconsistencies", "source", "target"} <= seen


@pytest.mark.parametrize("version", sorted(json.loads(OLDER.read_text())))
def test_records_older_versions_stored_read_back_as_they_were(version: str) -> None:
    """Before origin (a745c14) and blocked_by (87e5da2) a participant had neither: read back,
    they stay absent rather than appear as null."""
    for doc in json.loads(OLDER.read_text())[version]:
        rec = DeadlockRecord.from_json(doc)
        assert rec.to_json() == doc
        assert rec.diagnosis.pattern == doc["diagnosis"]["pattern"]
        assert rec.key == doc["key"] and rec.at == doc["at"]
        assert all("blocked_by" in t.absent and "origin" in t.absent for t in rec.transactions)


def test_from_json_of_nothing_is_an_empty_record_not_a_crash() -> None:
    rec = DeadlockRecord.from_json("not an object")
    assert rec.transactions == () and rec.diagnosis.pattern == "generic" and rec.key == ""
    assert rec.victim_trx is None and rec.in_scope("app")


def test_one_deadlock_is_diagnosed_once_per_cycle(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """MY102 (the check) and the daemon's journal (record_deadlocks) on one snapshot: one
    diagnosis, one record, the same object; the journal stores what MY102 shows."""
    text = (FIX / "innodb" / "mariadb-laravel-queue-index.txt").read_text()
    snap = Snapshot(target="t", engine="mysql", server_version="10.11.6-MariaDB",
                    version_num=101106, taken_at=0.0,
                    sections={"my.innodb_status": InnodbStatusSection.from_text(text),
                              "my.innodb_counters": {"deadlocks": 1}})
    calls: list[object] = []
    real = record_mod.diagnose

    def counting(dl: Deadlock) -> Diagnosis:
        calls.append(dl)
        return real(dl)

    monkeypatch.setattr(record_mod, "diagnose", counting)
    ev = evaluate(snap, load_catalogue(), Config(), Selection(("MY102",)))
    my102 = [f for f in ev.findings if f.rule == "MY102"]
    assert len(my102) == 1 and len(calls) == 1
    state = State(tmp_path / "s.db")
    try:
        spec = TargetSpec("t", "mysql://x@h/", "mysql")
        assert record_deadlocks(state, TargetResult(spec, snap, ev)) == 1
        assert len(calls) == 1  # the journal took the record MY102 made
        stored = state.deadlocks("t")[0]["data"]
    finally:
        state.close()
    assert stored == my102[0].evidence["deadlock"]
    assert latest_deadlock(snap) is latest_deadlock(snap)
