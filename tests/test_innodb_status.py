"""SHOW ENGINE INNODB STATUS parser: every corpus file, real captures, and format variants."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CORPUS as SHARED_CORPUS
from conftest import need_corpus

from dbwatch.parsers.innodb_common import normalize_ts, parse_lock_line, parse_thread, split_table
from dbwatch.parsers.innodb_status import parse_status

CORPUS = SHARED_CORPUS / "innodb-status"
FIX = Path(__file__).parent / "fixtures" / "innodb"


def load(name: str) -> str:
    path = FIX / name if (FIX / name).exists() else need_corpus(CORPUS / name)
    return path.read_text(encoding="utf-8", errors="replace")


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*")) + sorted(FIX.glob("*.txt")),
                         ids=lambda p: p.name[:70])
def test_every_capture_parses(path: Path) -> None:
    st = parse_status(path.read_text(encoding="utf-8", errors="replace"))
    json.dumps(st.to_dict())                      # JSON-able all the way down
    if st.deadlock is not None:
        json.dumps(st.deadlock.to_dict())
        assert st.deadlock.transactions


def dl_of(name: str):  # type: ignore[no-untyped-def]
    dl = parse_status(load(name)).deadlock
    assert dl is not None
    return dl


def test_mariadb_delete_vs_claim_corpus() -> None:
    st = parse_status(load("mariadb-10.11__laravel-queue-index__delete-vs-claim.txt"))
    assert st.at == "2026-11-22 01:28:36" and st.history_list_length == 17
    assert st.trx_id_counter == "60291" and not st.truncated
    assert "SEMAPHORES" in st.sections and st.sections["SEMAPHORES"] == ""
    dl = st.deadlock
    assert dl is not None and dl.at == "2026-11-22 01:28:36" and dl.victim == 1
    t1, t2 = dl.transactions
    assert (t1.trx_id, t1.thread_id, t1.query_id) == ("60287", 96, 195735)
    assert t1.query == "DELETE FROM `jobs` WHERE `id` = 35"
    assert (t1.lock_structs, t1.row_locks, t1.undo_entries) == (3, 2, 1)
    assert (t1.user, t1.host, t1.ip, t1.state) == ("root", "localhost", "127.0.0.1",
                                                   "updating or deleting")
    assert (t2.trx_id, t2.thread_id, t2.row_locks, t2.undo_entries) == ("60244", 82, 32, 0)
    assert t2.query.startswith("SELECT * FROM `jobs` WHERE `queue` = 'default'")
    assert t1.victim and not t2.victim and t1.tables == ("test.jobs",)
    locks = [(lk.n, lk.waiting, lk.mode, lk.index, lk.special) for lk in dl.locks]
    assert locks == [(1, True, "X", "jobs_queue_index", "rec but not gap"),
                     (2, False, "X", "jobs_queue_index", None),
                     (2, True, "X", "PRIMARY", "rec but not gap"),
                     (1, False, "X", "PRIMARY", "rec but not gap")]
    waiting = [t for t in st.transactions if t.lock_wait]
    assert len(waiting) == 6 and waiting[0].trx_id == "60285"
    assert waiting[0].lock_wait_seconds == pytest.approx(0.032075)
    assert waiting[0].waiting_lock is not None
    assert waiting[0].waiting_lock.index == "jobs_queue_index"


def test_mariadb_legacy_index_corpus() -> None:
    dl = dl_of("mariadb-10.11__laravel-legacy-index__claim-vs-claim.txt")
    assert dl.victim == 1 and dl.at == "2026-11-22 01:28:08"
    assert [(t.trx_id, t.thread_id) for t in dl.transactions] == [("36087", 40), ("36048", 39)]
    assert dl.transactions[1].query.startswith("UPDATE `jobs` SET `reserved_at` = 1795310888")
    assert dl.transactions[1].lock_structs == 23 and dl.transactions[1].row_locks == 62
    assert {lk.index for lk in dl.locks} == {"PRIMARY", "jobs_queue_reserved_at_index"}


def test_mdev_29187_victim_zero_resolved_from_transaction_list() -> None:
    dl = dl_of("external__mariadb-10.7.3__MDEV-29187-repro__innodb-status.txt")
    assert dl.printed_victim == 0
    assert dl.victim == 1 and dl.victim_source == "transactions-list"
    assert dl.transactions[0].trx_id == "77" and dl.transactions[0].thread_id == 16
    assert dl.transactions[0].host == "10.88.0.172" and dl.transactions[0].ip is None
    assert dl.transactions[1].trx_id == "76" and not dl.transactions[1].victim


def test_double_quoted_identifiers_and_old_timestamp() -> None:
    dl = dl_of("percona-toolkit__src__go__pt-secure-collect__testdata__"
               "2018_03_05_13_24_55-innodbstatus1")
    assert dl.at == "2018-02-27 14:45:46" and dl.victim == 2
    assert [t.trx_id for t in dl.transactions] == ["55984EF58", "55984EF59"]
    assert [t.thread_id for t in dl.transactions] == [29247292, 29247291]
    lk = dl.locks[0]
    assert (lk.db, lk.table, lk.index) == ("percona_com_redesign2015", "semaphore", "PRIMARY")
    assert dl.transactions[0].host == "bm-dell05-publicwww01.bm.int.percona.com"
    assert dl.transactions[0].ip == "10.10.9.210"


def test_mysql50_two_word_trx_ids_and_slash_table() -> None:
    dl = dl_of("percona-toolkit__t__pt-fk-error-logger__samples__is001.txt")
    assert [t.trx_id for t in dl.transactions] == ["3793488", "3793489"]
    assert dl.transactions[0].row_locks is None            # 5.0 does not print it
    assert dl.locks[0].db == "test" and dl.locks[0].table == "innotop_dl"
    assert dl.locks[0].index == "GEN_CLUST_INDEX" and dl.victim == 2


def test_insert_intention_and_quoted_index() -> None:
    dl = dl_of("innotop__t__innodb-status-004")
    assert dl.victim == 2 and dl.at == "2011-12-26 14:48:08"
    ii = [lk for lk in dl.locks if lk.insert_intention]
    assert len(ii) == 2 and all(lk.special == "gap" and lk.waiting for lk in ii)
    assert dl.locks[1].special is None and not dl.locks[1].waiting   # next-key, held


def test_too_deep_table_lock() -> None:
    dl = dl_of("percona-toolkit__t__pt-deadlock-logger__samples__bug_1195034.txt")
    assert dl.too_deep and dl.victim == 1 and dl.at == "2013-06-24 17:39:24"
    (t,) = dl.transactions
    assert t.trx_id == "3BF88F886" and t.thread_id == 23512694
    (lk,) = dl.locks
    assert (lk.lock_type, lk.mode, lk.db, lk.table, lk.index) == (
        "TABLE", "AUTO-INC", "db", "gr_v3_response_log", None)


def test_mysql_without_os_thread_handle() -> None:
    dl = dl_of("innotop__t__innodb-status-007")
    assert [t.thread_id for t in dl.transactions] == [384855, 383438]
    assert dl.transactions[0].user == "robot" and dl.transactions[0].undo_entries == 270
    assert dl.victim == 1


def test_mysql8_manual_example_holds_locks_of_both() -> None:
    """Built from the MySQL 8.0 manual's example; no MySQL 8 server runs here."""
    st = parse_status(load("mysql8-manual-example-status.txt"))
    dl = st.deadlock
    assert dl is not None and dl.at == "2022-11-25 15:58:22" and dl.victim == 2
    assert [(t.trx_id, t.thread_id, t.user) for t in dl.transactions] == [
        ("2107", 19, "u1"), ("2108", 20, "u2")]
    assert [(lk.n, lk.waiting, lk.mode, lk.table) for lk in dl.locks] == [
        (1, False, "S", "Animals"), (1, True, "X", "Birds"),
        (2, False, "S", "Birds"), (2, True, "X", "Animals")]
    assert st.history_list_length == 0 and st.oldest_transaction is not None
    assert st.oldest_transaction.trx_id == "2107"


def test_live_captures_match_known_values() -> None:
    dl = dl_of("mariadb-opposite-order.txt")
    assert [(t.trx_id, t.thread_id) for t in dl.transactions] == [("83630", 449), ("83631", 450)]
    assert dl.victim == 1
    dl = dl_of("mariadb-laravel-queue-index.txt")
    assert dl.victim == 1 and dl.transactions[1].query.startswith("DELETE FROM `dbw_dl_")


SYNTH = """=====================================
2024-01-02 03:04:05 0x7f00 INNODB MONITOR OUTPUT
=====================================
----------
SEMAPHORES
----------
------------------------
LATEST DETECTED DEADLOCK
------------------------
2024-01-02 03:04:00 0x7f01
*** (1) TRANSACTION:
TRANSACTION 10, ACTIVE 3 sec starting index read
LOCK WAIT 2 lock struct(s), heap size 1128, 1 row lock(s)
MySQL thread id 1, OS thread handle 1, query id 11 app.local 10.0.0.1 app updating
UPDATE t SET a = 1
  WHERE id = 2
*** (1) WAITING FOR THIS LOCK TO BE GRANTED:
RECORD LOCKS space id 1 page no 3 n bits 8 index `PRIMARY` of table `shop`.`t` /* Partition `p1` */ trx id 10 lock_mode X locks gap before rec insert intention waiting
*** (2) TRANSACTION:
TRANSACTION 11, ACTIVE 2 sec
MySQL thread id 2, OS thread handle 2, query id 12 localhost app
DELETE FROM t WHERE id = 3
*** (2) WAITING FOR THIS LOCK TO BE GRANTED:
RECORD LOCKS space id 1 page no 3 n bits 8 index k of table "shop"."t" trx id 11 lock mode S waiting
*** (3) TRANSACTION:
TRANSACTION 12, ACTIVE 1 sec
MySQL thread id 3, OS thread handle 3, query id 13 localhost app
INSERT INTO t VALUES (1)
*** (3) WAITING FOR THIS LOCK TO BE GRANTED:
TABLE LOCK table `shop`.`t` trx id 12 lock mode IX waiting
*** WE ROLL BACK TRANSACTION (3)
------------
TRANSACTIONS
------------
Trx id counter 20
History list length 1234
LIST OF TRANSACTIONS FOR EACH SESSION:
---TRANSACTION 10, ACTIVE 900 sec
MySQL thread id 1, OS thread handle 1, query id 11 app.local 10.0.0.1 app
"""


def test_three_transactions_partition_and_cut_text() -> None:
    st = parse_status(SYNTH)                       # no END marker: cut at the 1 MB limit
    assert st.truncated and st.history_list_length == 1234
    dl = st.deadlock
    assert dl is not None and len(dl.transactions) == 3 and dl.victim == 3
    assert dl.transactions[0].query == "UPDATE t SET a = 1\n  WHERE id = 2"
    assert dl.transactions[0].ip == "10.0.0.1" and dl.transactions[0].host == "app.local"
    first = dl.locks[0]
    assert (first.db, first.table, first.special, first.insert_intention) == (
        "shop", "t", "gap before rec", True)
    assert dl.locks[1].index == "k" and dl.locks[1].mode == "S" and dl.locks[1].special is None
    assert dl.locks[2].lock_type == "TABLE" and dl.locks[2].mode == "IX"
    assert st.oldest_transaction is not None and st.oldest_transaction.active_seconds == 900


def test_cut_inside_the_deadlock() -> None:
    text = SYNTH.split("*** (2) WAITING")[0]
    dl = parse_status(text).deadlock
    assert dl is not None and dl.truncated and dl.victim is None
    assert [t.trx_id for t in dl.transactions] == ["10", "11"]


def test_to_dict_has_exactly_the_spec_keys() -> None:
    d = dl_of("mariadb-10.11__laravel-queue-index__delete-vs-claim.txt").to_dict()
    assert set(d) == {"at", "victim", "transactions", "locks"}
    assert set(d["transactions"][0]) == {
        "n", "trx_id", "thread_id", "user", "host", "query", "active_seconds", "lock_structs",
        "row_locks", "undo_entries", "tables", "victim", "blocked_by"}
    assert set(d["locks"][0]) == {"n", "waiting", "mode", "db", "table", "index", "special",
                                  "insert_intention"}


@pytest.mark.parametrize("line,expected", [
    ("2018-03-05 13:24:55 0x7f1234", "2018-03-05 13:24:55"),
    ("180305 13:24:55", "2018-03-05 13:24:55"),
    ("120906  6:03:32", "2012-09-06 06:03:32"),
    ("2022-11-25 15:58:22 139815661168384", "2022-11-25 15:58:22"),
    ("2026-11-22  1:53:00 13 [Note] InnoDB:", "2026-11-22 01:53:00"),
    ("*** (1) TRANSACTION:", None),
])
def test_timestamps(line: str, expected: str | None) -> None:
    assert normalize_ts(line)[0] == expected


@pytest.mark.parametrize("text,expected", [
    ("`test`.`jobs`", ("test", "jobs")), ('"test"."jobs"', ("test", "jobs")),
    ("`test/innotop_dl`", ("test", "innotop_dl")), ("`sequenceid`", (None, "sequenceid")),
    ("`we``ird`.`t.x`", ("we`ird", "t.x")),
])
def test_split_table(text: str, expected: tuple[str | None, str]) -> None:
    assert split_table(text) == expected


def test_lock_line_specials() -> None:
    base = "RECORD LOCKS space id 9 page no 9 n bits 8 index `PRIMARY` of table `a`.`b` trx id 5 "
    assert parse_lock_line(base + "lock_mode X")["special"] is None           # type: ignore[index]
    assert parse_lock_line(base + "lock_mode X locks gap before rec")["special"] == "gap before rec"  # type: ignore[index]
    assert parse_lock_line("garbage") is None
    assert parse_thread("MySQL thread id 5, query id 9") == {
        "thread_id": 5, "query_id": 9, "host": None, "ip": None, "user": None,
        "thread_state": None}
