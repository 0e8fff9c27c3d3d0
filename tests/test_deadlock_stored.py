"""The deadlock journal's compact rows (deadlocks.stored): what the log tail stores of a record
leaves out the diagnosis' explanation and fix where reading the row back gives them again;
every reader (JournalStore.deadlocks, StateReader.deadlocks: the dashboard, `deadlocks
--history`) sees the full record JSON, on SQLite and PostgreSQL state alike, old rows too."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from differential import run_inprocess

from dbwatch.daemon.state import State
from dbwatch.deadlocks.live import _logged, tail_findings
from dbwatch.deadlocks.record import DeadlockRecord, deadlock_record
from dbwatch.deadlocks.stored import expand, full_text, stored_text
from dbwatch.parsers import innodb_storm
from dbwatch.parsers.errorlog import slim
from dbwatch.parsers.innodb_storm import ShapeCache, full_scan
from dbwatch.statereader import StateReader

INNODB = Path(__file__).parent / "fixtures" / "innodb"
QUEUE_LOGS = (
    INNODB / "mariadb-error-log-excerpt.log",  # legacy index; victims printed and inferred
    INNODB / "variants" / "mysql57-laravel-jobs-cut-delete.log",  # claim vs delete
)


def _records(path: Path) -> list[DeadlockRecord]:
    dls = full_scan(slim(path.read_bytes()), True)[0]
    assert dls
    return [deadlock_record(dl).tagged(source="log_file") for dl in dls]


@pytest.mark.parametrize("path", QUEUE_LOGS, ids=lambda p: p.name)
def test_a_queue_deadlock_is_stored_compact_and_reads_back_whole(path: Path) -> None:
    for dl in full_scan(slim(path.read_bytes()), True)[0]:
        rec = deadlock_record(dl).tagged(source="log_file")
        full, stored = full_text(rec), stored_text(rec)
        assert _logged(dl) == (rec, stored)  # what the tail stores
        data = json.loads(stored)
        assert data["diagnosis"] == {
            "derived": True,
            "pattern": rec.diagnosis.pattern,
            "rules": [*rec.diagnosis.rules],
        }
        assert len(stored) < 2000 < len(full)  # two rows or more to a 4 KB page
        back = expand(data)
        assert json.dumps(back, sort_keys=True) == full  # the same text, types and all
        assert list(back) == list(json.loads(full))  # the same key order
        assert list(back["diagnosis"]) == list(json.loads(full)["diagnosis"])
        assert DeadlockRecord.from_json(back) == rec
        assert expand(json.loads(full)) == json.loads(full)  # a full row: as it is


def test_a_diagnosis_the_record_cannot_give_again_is_stored_whole() -> None:
    """opposite-order-rows reads the locks' pages and heap numbers, which the record does not
    keep: re-derived from the row it could differ, so the row keeps the diagnosis' text."""
    recs = _records(INNODB / "mysql8-manual-example-error.log")
    assert {r.diagnosis.pattern for r in recs} == {"opposite-order-rows"}
    for rec in recs:
        assert stored_text(rec) == full_text(rec)


def _storm(log: Path, n: int, first: int) -> str:
    """n reports of one shape (the fixture's report alone, its trx ids changed)."""
    lines = (INNODB / "variants" / "mysql57-laravel-jobs-cut-delete.log").read_text()
    lines_ = lines.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines_) if "deadlock detected" in line)
    end = next(i for i, line in enumerate(lines_) if "WE ROLL BACK" in line) + 1
    text = "".join(lines_[start:end])
    return "".join(
        text.replace("41722335", f"5{i:07d}").replace("41722336", f"6{i:07d}")
        for i in range(first, first + n)
    )


def test_readers_see_the_full_records(state_at: str, tmp_path: Path) -> None:
    """A storm the tail stored compact reads back through both readers as the full records'
    JSON; the pattern filter (json_extract / ->>) reads the compact rows; a row an older
    version stored in full reads as before."""
    log = tmp_path / "error.log"
    log.write_text("")
    st = State(state_at)
    try:
        tail_findings(st, "t", "mysql", str(log))
        text = _storm(log, 30, 0)
        with log.open("a") as fh:
            fh.write(text)
        tail_findings(st, "t", "mysql", str(log))
        recs = [_logged(dl)[0] for dl in full_scan(slim(text.encode()), True)[0]]
        old = recs[0].to_json() | {"key": "old-row"}
        assert st.record_deadlock("t", "old-row", recs[0].at, old)  # the full form, as before
        want = {r.key: json.loads(full_text(r)) for r in recs} | {"old-row": json.loads(
            json.dumps(old, sort_keys=True))}  # fmt: skip
        assert st.deadlock_count("t") == 31
        got = {str(d["key"]): d["data"] for d in st.deadlocks("t", limit=100)}
        assert got == want
        for d in got.values():
            assert isinstance(d, dict) and list(d) == sorted(d)
        if not state_at.startswith("postgresql"):
            # what the rows hold: compact (no explanation), under 2 KB; the old row in full
            with sqlite3.connect(state_at) as db:
                rows = db.execute(
                    "SELECT key, length(data), json_extract(data, '$.diagnosis.explanation'),"
                    " json_extract(data, '$.diagnosis.pattern') FROM deadlocks"
                ).fetchall()
            # the first report of the storm is built the full way (seen once, not learnt
            # yet): its row is full, as a one-off's; the others come from the shape's template
            full_rows = {recs[0].key, "old-row"}
            for key, size, explanation, pattern in rows:
                assert pattern == "queue-claim-vs-delete"
                assert (explanation is None and size < 2000) == (key not in full_rows)
        reader = StateReader.over(st)  # the dashboard's and the commands' reader
        page = reader.deadlocks(target="t", limit=100)
        assert {str(r["key"]): r["data"] for r in page.rows} == want
        assert reader.deadlocks(pattern="queue-claim-vs-delete", limit=100).total == 31
        assert reader.deadlock_patterns("t", 0.0) == {"queue-claim-vs-delete": 31}
    finally:
        st.close()


def test_history_prints_the_same_for_compact_and_full_rows(tmp_path: Path) -> None:
    """`deadlocks --history` (text and JSON) of a state whose rows the tail stored compact
    and of one holding the same records in full: the same output."""
    recs = _records(QUEUE_LOGS[0]) + _records(QUEUE_LOGS[1])
    outs = []
    for form, text_of in (("compact", stored_text), ("full", full_text)):
        path = tmp_path / f"{form}.db"
        st = State(path)
        try:
            with st.transaction():
                st.record_deadlocks("t", [(f"{i:03d}", r.at, text_of(r)) for i, r in enumerate(recs)])
        finally:
            st.close()
        with sqlite3.connect(path) as db:  # the same seen_at: the same order and hours
            db.execute("UPDATE deadlocks SET seen_at = 1795300000 + CAST(key AS INTEGER)")
        runs = [
            run_inprocess(["deadlocks", "--history", "--state", str(path), *more])
            for more in ((), ("--format", "json"), ("--summary", "--format", "json"))
        ]
        outs.append([(rc, out.replace(str(path), "<STATE>")) for rc, out, _ in runs])
    assert outs[0] == outs[1]
    assert all(rc == 0 and out for rc, out in outs[0])
    assert "Fix" in outs[0][0][1] or "fix" in outs[0][0][1]


def test_a_one_off_is_stored_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report built the full way (not from a learnt shape: a one-off) is stored in full: the
    compact row's check would cost more than its smaller page saves; a storm's rows after its
    shape is learnt are compact."""
    monkeypatch.setattr(innodb_storm, "SHAPES", ShapeCache())  # no shape learnt yet
    log = tmp_path / "error.log"
    log.write_text("")
    st = State(tmp_path / "s.db")
    try:
        tail_findings(st, "t", "mysql", str(log))
        with log.open("a") as fh:
            fh.write(_storm(log, 1, 0))
        tail_findings(st, "t", "mysql", str(log))
        with log.open("a") as fh:
            fh.write(_storm(log, 5, 1))
        tail_findings(st, "t", "mysql", str(log))
    finally:
        st.close()
    with sqlite3.connect(tmp_path / "s.db") as db:
        rows = db.execute(
            "SELECT key, json_extract(data, '$.diagnosis.derived') FROM deadlocks ORDER BY rowid"
        ).fetchall()
    # the first report: seen once, parsed, stored full; seen again, its shape is learnt and
    # every later row comes from the shape's template: compact
    assert [derived for _, derived in rows] == [None, 1, 1, 1, 1, 1]


def test_a_row_that_cannot_be_expanded_is_read_as_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compact row whose diagnosis this version cannot derive (a fault) does not break the
    readers: it reads as stored (pattern and rules, no explanation), the others expanded."""
    recs = _records(QUEUE_LOGS[1])
    compact = stored_text(recs[0])
    st = State(tmp_path / "s.db")
    try:
        with st.transaction():
            st.record_deadlocks("t", [("a", recs[0].at, compact)])
        from dbwatch.deadlocks import stored

        def broken(dl: object) -> object:
            raise RuntimeError("a fault")

        monkeypatch.setattr(stored, "diagnose", broken)
        (row,) = st.deadlocks("t")
        assert row["data"] == json.loads(compact)
        assert DeadlockRecord.from_json(row["data"]).diagnosis.explanation == ""
        monkeypatch.undo()
        (row,) = st.deadlocks("t")
        assert row["data"] == json.loads(full_text(recs[0]))
    finally:
        st.close()
