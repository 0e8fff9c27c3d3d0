"""Error-log deadlock reader: MariaDB blocks, MySQL 8 event lines, garbage, bounded blocks."""

from __future__ import annotations

from pathlib import Path

from dbwatch.parsers.errorlog import MAX_BLOCK_LINES, iter_deadlocks

FIX = Path(__file__).parent / "fixtures" / "innodb"


def test_mariadb_block_form_real_excerpt() -> None:
    with open(FIX / "mariadb-error-log-excerpt.log", encoding="utf-8") as fh:
        found = list(iter_deadlocks(fh))
    assert len(found) == 4
    first = found[0]
    assert first.at == "2026-11-22 02:01:37" and first.victim == 1 and not first.truncated
    assert [(t.trx_id, t.thread_id) for t in first.transactions] == [
        ("107448", 522),
        ("107462", 520),
    ]
    assert first.transactions[0].query.startswith("UPDATE `dbw_dl_9066e55d_jobs` SET `reserved_at`")
    assert [d.victim for d in found] == [1, 2, 2, 2]
    assert all(
        lk.index in ("PRIMARY", "dbw_dl_9066e55d_jobs_queue_reserved_at_index")
        for d in found
        for lk in d.locks
    )


def test_mysql8_event_lines_with_interleaved_messages() -> None:
    with open(FIX / "mysql8-manual-example-error.log", encoding="utf-8") as fh:
        (dl,) = list(iter_deadlocks(fh))
    assert dl.at == "2022-11-25 15:58:22" and dl.victim == 2 and not dl.truncated
    assert [(t.trx_id, t.thread_id, t.user) for t in dl.transactions] == [
        ("2107", 19, "u1"),
        ("2108", 20, "u2"),
    ]
    assert [(lk.n, lk.waiting, lk.table) for lk in dl.locks] == [
        (1, False, "Animals"),
        (1, True, "Birds"),
        (2, False, "Birds"),
        (2, True, "Animals"),
    ]
    assert dl.transactions[0].query == "UPDATE Birds SET value=30 WHERE name='Buzzard'"


MYSQL57 = """2018-03-05T13:24:55.123456Z 12 [Note] InnoDB: Transactions deadlock detected, dumping detailed information.
2018-03-05T13:24:55.123470Z 12 [Note] InnoDB: 
*** (1) TRANSACTION:

TRANSACTION 3405, ACTIVE 161 sec starting index read
LOCK WAIT 3 lock struct(s), heap size 376, 3 row lock(s), undo log entries 2
MySQL thread id 19, OS thread handle 140377, query id 180 localhost root updating
update a set movie_id=96 where id =2
2018-03-05T13:24:55.123480Z 12 [Note] InnoDB: *** (1) WAITING FOR THIS LOCK TO BE GRANTED:

RECORD LOCKS space id 0 page no 307 n bits 72 index PRIMARY of table `test`.`a` trx id 3405 lock_mode X locks rec but not gap waiting
2018-03-05T13:24:55.123490Z 12 [Note] InnoDB: *** (2) TRANSACTION:

TRANSACTION 3404, ACTIVE 1026 sec starting index read
3 lock struct(s), heap size 376, 2 row lock(s), undo log entries 1
MySQL thread id 18, OS thread handle 140378, query id 181 localhost root updating
update a set movie_id=98 where id =4
2018-03-05T13:24:55.123500Z 12 [Note] InnoDB: *** (2) HOLDS THE LOCK(S):

RECORD LOCKS space id 0 page no 307 n bits 72 index PRIMARY of table `test`.`a` trx id 3404 lock_mode X locks rec but not gap
2018-03-05T13:24:55.123510Z 12 [Note] InnoDB: *** (2) WAITING FOR THIS LOCK TO BE GRANTED:

RECORD LOCKS space id 0 page no 307 n bits 72 index PRIMARY of table `test`.`a` trx id 3404 lock_mode X locks rec but not gap waiting
2018-03-05T13:24:55.123520Z 12 [Note] InnoDB: *** WE ROLL BACK TRANSACTION (2)
"""


def test_mysql57_prefix_and_many_copies_streamed() -> None:
    def gen():  # a 1,000-deadlock log, never held in memory as a whole
        for _ in range(1000):
            yield from MYSQL57.splitlines(keepends=True)
            yield "random garbage line \x00\xff\n"

    found = list(iter_deadlocks(gen()))
    assert len(found) == 1000
    dl = found[0]
    assert dl.at == "2018-03-05 13:24:55" and dl.victim == 2
    assert [t.trx_id for t in dl.transactions] == ["3405", "3404"]


def test_incomplete_block_is_flushed_by_the_next_one() -> None:
    cut = MYSQL57.split("2018-03-05T13:24:55.123510Z")[0]
    found = list(iter_deadlocks((cut + MYSQL57).splitlines()))
    assert len(found) == 2
    assert found[0].truncated and found[0].victim is None
    # Nothing ended the cut report: the next header may sit in its query text, so the
    # second report is read (counted, shown) but names no victim (issue 18.4).
    assert not found[1].truncated and found[1].victim is None and found[1].ambiguous
    assert found[1].printed_victim == 2
    # ... nor, as facts, its transactions: one reading says the whole report is query text.
    # They are shown as unverified text instead (issue 22).
    assert found[1].transactions == () and found[1].locks == ()
    assert "TRANSACTION 3405" in "\n".join(found[1].unverified)


def test_other_innodb_message_from_the_same_thread_ends_a_block() -> None:
    cut = MYSQL57.split("2018-03-05T13:24:55.123510Z")[0]
    tail = "2018-03-05T13:24:56.000000Z 12 [Note] InnoDB: Buffer pool(s) load completed\n"
    (dl,) = list(iter_deadlocks((cut + tail + "TRANSACTION 99, ACTIVE 1 sec\n").splitlines()))
    assert dl.truncated and [t.trx_id for t in dl.transactions] == ["3405", "3404"]


def test_unbounded_block_is_cut() -> None:
    def gen():
        yield from MYSQL57.splitlines()[:8]
        for i in range(MAX_BLOCK_LINES + 10):
            yield f"noise {i}"
        yield from MYSQL57.splitlines()

    found = list(iter_deadlocks(gen()))
    assert len(found) == 2 and found[0].truncated and found[1].victim == 2


def test_garbage_only() -> None:
    assert list(iter_deadlocks(["", "x" * 100_000, "2020-01-01 00:00:00 1 [Note] hi", "***"])) == []


def test_byte_path_keeps_one_record_line_per_lock_and_reads_the_same() -> None:
    """slim() (the tailer's bytes path) drops repeated `Record lock, heap no` lines: the
    deadlock read is the same as from every line, but for the heap numbers after the first."""
    from dbwatch.parsers.errorlog import iter_deadlocks_bytes, slim

    raw = Path(__file__).parent / "fixtures" / "innodb" / "mariadb-error-log-excerpt.log"
    data = raw.read_bytes()
    kept = [ln for ln in slim(data) if ln.startswith("Record lock, heap no")]
    every = [ln for ln in data.decode().splitlines() if ln.startswith("Record lock, heap no")]
    assert 0 < len(kept) < len(every)
    every_dl = list(iter_deadlocks(data.decode().splitlines()))
    slim_dl = list(iter_deadlocks_bytes([data]))
    assert len(every_dl) == len(slim_dl) >= 1
    assert any(b.victim is not None for b in slim_dl)
    for a, b in zip(every_dl, slim_dl):
        assert (a.victim, a.ambiguous, a.transactions) == (b.victim, b.ambiguous, b.transactions)
        assert [(lk.n, lk.waiting, lk.index, lk.heap_nos[:1]) for lk in a.locks] == [
            (lk.n, lk.waiting, lk.index, lk.heap_nos[:1]) for lk in b.locks
        ]
        assert all(len(lk.heap_nos) <= 1 for lk in b.locks)


def test_prefix_memo_gives_what_the_regex_gives() -> None:
    """Scanner skips _PREFIX for a line that starts with the last InnoDB-tagged prefix:
    every fixture line, and lines that only look alike, clean the same either way."""
    from pathlib import Path

    from dbwatch.parsers.errorlog import PrefixMemo, clean

    lines: list[str] = []
    for f in sorted(Path(__file__).parent.joinpath("fixtures", "innodb").rglob("*.*")):
        lines += f.read_text(errors="replace").splitlines()
    p = "2026-11-22  2:01:37 522 [Note] InnoDB:"
    lines += [
        p + " x",
        p + "x",
        p[:-7] + "[InnoDB] y",
        p[:-7] + "[InnoDB]",
        p + " InnoDB: z",
        p.replace("522", "523") + " w",
        p[:-7] + "[InnoDB] [Warning] v",
        p + ": u",
    ]
    memo = PrefixMemo()
    for ln in lines + lines[::-1]:
        assert clean(ln, memo) == clean(ln), ln
