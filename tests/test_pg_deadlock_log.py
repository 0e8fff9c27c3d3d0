"""PostgreSQL deadlock logs captured from a throwaway PG 15 cluster (tests/fixtures/pglog):
stderr with Debian's log_line_prefix, csvlog and jsonlog read to the same deadlock."""
from __future__ import annotations

from pathlib import Path

import pytest

from dbwatch.deadlocks.diagnosis import diagnose
from dbwatch.deadlocks.record import deadlock_record
from dbwatch.parsers.pg_deadlock import PgScanner, iter_pg_deadlocks

FIX = Path(__file__).parent / "fixtures" / "pglog"
FILES = ["pg15-stderr-debian-prefix.log", "pg15-csvlog.csv", "pg15-jsonlog.json"]


@pytest.mark.parametrize("name", FILES)
def test_each_format(name: str) -> None:
    with open(FIX / name, encoding="utf-8") as fh:
        (dl,) = list(iter_pg_deadlocks(fh))
    assert [t.thread_id for t in dl.transactions] == [7615, 7614]
    assert dl.victim == 1 and dl.trx(1).victim  # type: ignore[union-attr]
    assert [t.trx_id for t in dl.transactions] == ["726", "727"]  # xids from "on transaction X"
    assert all(lk.waiting and lk.mode == "ShareLock" for lk in dl.locks)
    assert dl.locks[0].table == "jobs" and dl.locks[0].db == "postgres"
    assert dl.at == "2026-11-22 21:51:26"
    assert "LIMIT 2 FOR UPDATE" in (dl.trx(2).query or "")  # type: ignore[union-attr]
    d = diagnose(dl)
    assert d.pattern == "queue-claim-vs-delete" and "40P01" in d.fix


def test_other_prefixes_and_noise() -> None:
    text = (FIX / "pg15-stderr-debian-prefix.log").read_text()
    for prefix in ("2026-11-22 21:51:26.123 UTC [7615] ", "<7615> db=postgres ", ""):
        lines = [prefix + ln.split(": ", 1)[1] if ln.startswith("2026") and ": " in ln else ln
                 for ln in text.splitlines()]
        sc = PgScanner()
        (dl,) = list(iter_pg_deadlocks(lines, sc))
        assert [t.thread_id for t in dl.transactions] == [7615, 7614]
        assert sc.recognised > 3


def test_no_detail_is_what_the_cut_text_holds() -> None:
    """log_error_verbosity = terse prints no DETAIL: the deadlock is still reported (the server
    counted it), with the one process and statement the text holds, flagged as cut."""
    lines = ["2026-11-22 21:51:26 UTC [1] ERROR:  deadlock detected",
             "2026-11-22 21:51:26 UTC [1] STATEMENT:  select 1"]
    (dl,) = list(iter_pg_deadlocks(lines))
    assert [(t.thread_id, t.query, t.victim) for t in dl.transactions] == [(1, "select 1", True)]
    assert dl.truncated and not dl.locks and "no DETAIL" in dl.unparsed[0]
    record = deadlock_record(dl)
    assert record.truncated is True and record.unparsed


@pytest.mark.parametrize(
    "name", ["pg15-german-stderr.log", "pg15-german-csvlog.csv", "pg15-german-jsonlog.json"]
)
def test_german_server_captured(name: str) -> None:
    """lc_messages = de_DE on a throwaway PG 15 (tests/live/test_pg_deadlock_log_live.py):
    `40P01 FEHLER:  Verklemmung (Deadlock) entdeckt`, `Prozess N wartet auf ShareLock-Sperre
    auf Transaktion X; blockiert von Prozess M.`; jsonlog keeps `ERROR` in English."""
    with open(FIX / name, encoding="utf-8") as fh:
        (dl,) = list(iter_pg_deadlocks(fh))
    assert [t.thread_id for t in dl.transactions] == [364, 363]
    assert [t.blocked_by for t in dl.transactions] == [2, 1] and dl.victim == 1
    assert [lk.mode for lk in dl.locks] == ["ShareLock", "ShareLock"]
    assert [t.query for t in dl.transactions] == ["UPDATE jobs SET state = 'want' WHERE id = $1"] * 2
    assert not dl.truncated and not dl.unparsed
