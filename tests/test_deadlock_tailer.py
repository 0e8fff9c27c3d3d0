"""Tailing a server log: each deadlock once across partial writes, restarts and rotation."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dbwatch.daemon.state import State
from dbwatch.deadlocks.live import tail_findings

FIX = Path(__file__).parent / "fixtures" / "innodb"
EXCERPT = (FIX / "mariadb-error-log-excerpt.log").read_text()
BLOCKS = ["2026" + b for b in EXCERPT.split("\n2026") if "deadlock detected" in b]


def report(i: int) -> str:
    """The i-th distinct report: the first real block with unique trx ids."""
    return (BLOCKS[0].replace("107448", f"9{i:05d}1").replace("107462", f"9{i:05d}2")
            .rstrip("\n") + "\n" + BLOCKS[1].split("*** (1) TRANSACTION:")[0].split(
                "deadlock detected")[0][:0])


def full(i: int) -> str:
    lines = EXCERPT.splitlines(keepends=True)
    start = next(k for k, ln in enumerate(lines) if "deadlock detected" in ln)
    end = next(k for k, ln in enumerate(lines) if "WE ROLL BACK" in ln) + 1
    text = "".join(lines[start:end])
    return text.replace("107448", f"8{i:05d}1").replace("107462", f"8{i:05d}2")


def poll(state: State, log: Path) -> int:
    return sum(f.evidence.get("count", 1) for f in tail_findings(state, "t", "mysql", str(log)))


def test_partial_restart_rename_and_copytruncate(tmp_path: Path) -> None:
    log = tmp_path / "error.log"
    log.write_text("2026-11-22  2:00:00 0 [Note] starting\n")
    db = tmp_path / "state.db"
    st = State(db)
    assert poll(st, log) == 0  # first look: from the end
    with log.open("a") as fh:
        fh.write(full(1) + full(2))
        half = full(3)
        fh.write(half[: len(half) // 2])
    assert poll(st, log) == 2  # the half-written report waits
    with log.open("a") as fh:
        fh.write(half[len(half) // 2:] + "2026-11-22  2:01:40 0 [Note] other\n")
    assert poll(st, log) == 1
    st.close()
    st = State(db)  # restart: nothing again
    assert poll(st, log) == 0
    # rename rotation with unread lines in the old file
    with log.open("a") as fh:
        fh.write(full(4))
    log.rename(tmp_path / "error.log.1")
    log.write_text(full(5))
    assert poll(st, log) == 2
    # copytruncate with unread lines
    with log.open("a") as fh:
        fh.write(full(6) + full(7))
    shutil.copy(log, tmp_path / "error.log.2")
    with log.open("r+") as fh:
        fh.truncate(0)
    with log.open("a") as fh:
        fh.write(full(8))
    assert poll(st, log) == 3
    assert poll(st, log) == 0
    assert st.deadlock_count("t") == 8
    st.close()


def test_burst_becomes_one_finding(tmp_path: Path) -> None:
    log = tmp_path / "error.log"
    log.write_text("")
    st = State(tmp_path / "s.db")
    tail_findings(st, "t", "mysql", str(log))
    log.write_text("".join(full(i) for i in range(20)))
    (f,) = tail_findings(st, "t", "mysql", str(log))
    assert f.rule == "MY102" and f.evidence["count"] == 20 and "20 deadlocks" in f.summary
    assert st.deadlock_count("t") == 20


def test_postgresql_logs_tailed(tmp_path: Path) -> None:
    fix = Path(__file__).parent / "fixtures" / "pglog"
    for name in ("pg15-stderr-debian-prefix.log", "pg15-csvlog.csv", "pg15-jsonlog.json"):
        log = tmp_path / name
        log.write_text("")
        st = State(tmp_path / f"{name}.db")
        assert tail_findings(st, "pg", "postgresql", str(log)) == []
        text = (fix / name).read_text()
        with log.open("a") as fh:
            fh.write(text)
        got = tail_findings(st, "pg", "postgresql", str(log))
        if name.endswith(".csv"):  # the last CSV record waits for the next one to begin
            with log.open("a") as fh:
                fh.write(text.splitlines(keepends=True)[0])
            got += tail_findings(st, "pg", "postgresql", str(log))
        assert [f.rule for f in got] == ["PG102"], name
        assert got[0].evidence["diagnosis"]["pattern"] == "queue-claim-vs-delete"
        assert tail_findings(st, "pg", "postgresql", str(log)) == []
        assert st.deadlock_count("pg") == 1
        st.close()


def test_missing_log_changes_nothing(tmp_path: Path) -> None:
    st = State(tmp_path / "s.db")
    assert tail_findings(st, "t", "mysql", str(tmp_path / "absent.log")) == []
    assert st.deadlock_count("t") == 0


def test_an_unreadable_log_is_said_once_while_it_stays_unreadable(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The daemon keeps the set of logs it has said are unreadable (no module-level state):
    one warning per outage, again after the file was readable in between."""
    from dbwatch.deadlocks.tailer import poll

    log_file = tmp_path / "missing.log"
    warned: set[str] = set()
    with caplog.at_level("WARNING", logger="dbwatch.deadlocks.tailer"):
        for _ in range(3):
            assert poll(log_file, "mysql", None, warned) == ([], None)
        assert len([r for r in caplog.records if "cannot read" in r.getMessage()]) == 1
        log_file.write_text("")
        found, pos = poll(log_file, "mysql", None, warned)
        assert found == [] and pos is not None and warned == set()
        log_file.unlink()
        poll(log_file, "mysql", pos, warned)
        assert len([r for r in caplog.records if "cannot read" in r.getMessage()]) == 2
        poll(log_file, "mysql", pos)  # without a set: said every time
        assert len([r for r in caplog.records if "cannot read" in r.getMessage()]) == 3


def test_storm_findings_are_the_full_records(tmp_path: Path) -> None:
    """In a storm the tail builds few records (the rest from their shapes' templates, key,
    time, schemas and pattern only): its findings and journal rows are what the full records
    make, a burst and separate findings alike, scoped or not."""
    from dbwatch.deadlocks.live import _burst, _finding, _logged
    from dbwatch.parsers.errorlog import slim
    from dbwatch.parsers.innodb_storm import SHAPES, Later, full_scan

    for n, scope in ((30, None), (30, "test"), (4, "TEST"), (30, "other")):
        log = tmp_path / f"{n}-{scope}.log"
        log.write_text("")
        st = State(tmp_path / f"{n}-{scope}.db")
        tail_findings(st, "t", "mysql", str(log))
        for k in range(3):  # the shapes learnt, then read from them
            text = "".join(full(100 * k + i) for i in range(n))
            with log.open("a") as fh:
                fh.write(text)
            built = SHAPES.built
            got = tail_findings(st, "t", "mysql", str(log), scope=scope)
            assert k == 0 or SHAPES.built - built == n  # from the learnt shape
            recs = [_logged(dl)[0] for dl in full_scan(slim(text.encode()), True)[0]]
            assert len(recs) == n
            if scope == "other":
                assert got == [] and st.deadlock_count("t") == 0
                continue
            if n > 5:
                later = [Later(r, None, (), (r.key, r.at, (), r.diagnosis.pattern)) for r in recs]
                assert got == [_burst("MY102", "t", later, "warning")]
            else:
                assert got == [_finding("MY102", "t", r, "warning") for r in recs]
            rows = {d["key"]: d["data"] for d in st.deadlocks("t", limit=1000)}
            for r in recs:
                assert rows[r.key] == json.loads(_logged_text(r))
        assert st.deadlock_count("t") == (0 if scope == "other" else 3 * n)


def _logged_text(rec: object) -> str:
    from dbwatch.daemon.journal import _as_json

    return _as_json(rec.to_json())  # type: ignore[attr-defined]


def test_a_storm_is_stored_readable_and_once(tmp_path: Path) -> None:
    """What the tail stores of a storm built from its shapes reads back (`dbwatch deadlocks
    --history` and the dashboard read it through StateReader) as the full path's records, a
    report whose thread id has a leading zero among them (the stored JSON once spliced its
    text, 0413, where the record holds 413: not JSON); a restart records nothing twice; a
    spoofed report in the storm (report sections in a query) is as suspect as before."""
    from test_deadlock_spoofing import FAKE_TAIL, LOG, QUERY

    from dbwatch.deadlocks.live import _logged
    from dbwatch.deadlocks.record import DeadlockRecord
    from dbwatch.parsers.errorlog import slim
    from dbwatch.parsers.innodb_storm import full_scan
    from dbwatch.statereader import StateReader

    log = tmp_path / "error.log"
    log.write_text("")
    db = tmp_path / "state.db"
    st = State(db)
    tail_findings(st, "t", "mysql", str(log))
    texts = [
        LOG.replace("41722335", f"5{i:07d}").replace("41722336", f"6{i:07d}") for i in range(40)
    ]
    texts[25] = texts[25].replace("thread id 2240,", "thread id 0413,")
    texts[30] = texts[30].replace(QUERY, QUERY + FAKE_TAIL, 1)  # sections in a query
    text = "".join(texts)
    with log.open("a") as fh:
        fh.write(text[: len(text) // 2])
    tail_findings(st, "t", "mysql", str(log))
    st.close()
    st = State(db)  # a restart between the halves
    with log.open("a") as fh:
        fh.write(text[len(text) // 2 :])
    tail_findings(st, "t", "mysql", str(log))
    assert tail_findings(st, "t", "mysql", str(log)) == []
    dls = full_scan(slim(text.encode()), True)[0]
    assert dls[30].ambiguous and dls[30].victim is None  # type: ignore[attr-defined]
    want: dict[str, DeadlockRecord] = {}
    for dl in dls:  # the journal keeps the first of a key (the suspect ones after a spoof
        rec = _logged(dl)[0]  # may share theirs)
        want.setdefault(rec.key, rec)
    assert len(want) == st.deadlock_count("t") >= 30
    assert [t.thread_id for t in want["trx:50000025,60000025"].transactions] == [413, 2245]
    rows = StateReader(db).deadlocks(target="t", limit=1000).rows
    got = {str(r["key"]): DeadlockRecord.from_json(r["data"]) for r in rows}
    assert got == {k: r.tagged(source="log_file") for k, r in want.items()}
    st.close()


def test_record_deadlocks_says_which_are_new(tmp_path: Path) -> None:
    """The tail's batch: one flag per row in order, a key seen before (in the journal or
    earlier in the batch) False; inside an open transaction it joins it (rolled back with it)."""
    st = State(tmp_path / "s.db")
    assert st.record_deadlock("t", "a", None, {"key": "a"})
    assert st.record_deadlocks("t", [("b", "2026-11-22 02:01:37", '{"key": "b"}'),
                                     ("a", None, "{}"), ("b", None, "{}"),
                                     ("c", None, {"key": "c"})]) == [True, False, False, True]  # fmt: skip
    assert st.record_deadlocks("u", [("a", None, "{}")]) == [True]  # another target's
    with pytest.raises(RuntimeError), st.transaction():
        assert st.record_deadlocks("t", [("d", None, "{}")]) == [True]
        raise RuntimeError
    rows = {(d["target"], d["key"]): d for d in st.deadlocks(limit=10)}
    assert sorted(rows) == [("t", "a"), ("t", "b"), ("t", "c"), ("u", "a")]
    assert rows[("t", "b")]["data"] == {"key": "b"} and rows[("t", "b")]["at"] == "2026-11-22 02:01:37"
    assert rows[("t", "c")]["data"] == {"key": "c"}
    st.close()
