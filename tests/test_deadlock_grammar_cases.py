"""Issue 22's measured failures, one test each, and real published reports read field by field
(tests/fixtures/innodb/published/README.md names their sources).
"""
from __future__ import annotations

from pathlib import Path

from dbwatch.deadlocks.diagnosis import diagnose
from dbwatch.deadlocks.record import deadlock_record
from dbwatch.parsers.errorlog import iter_deadlocks, iter_deadlocks_bytes
from dbwatch.parsers.innodb_status import parse_status

PUB = Path(__file__).parent / "fixtures" / "innodb" / "published"
CLAIM = ("select * from `jobs` where `queue` = ? and ((`reserved_at` is null and "
         "`available_at` <= ?) or (`reserved_at` <= ?)) order by `id` asc limit 1 for update")
P57 = "2019-06-12T08:15:42.318300Z 2245 [Note] InnoDB: "

# DeadlockChecker::rollback_print (5.7 / 8.0 < 8.0.18) then check_and_resolve's fixed (2)
TOO_DEEP_57 = f"""{P57}Transactions deadlock detected, dumping detailed information.
{P57}TOO DEEP OR LONG SEARCH IN THE LOCK TABLE WAITS-FOR GRAPH, WE WILL ROLL BACK FOLLOWING TRANSACTION 

*** TRANSACTION:

TRANSACTION 41722400, ACTIVE 0 sec starting index read
mysql tables in use 1, locked 1
LOCK WAIT 2 lock struct(s), heap size 1136, 1 row lock(s)
MySQL thread id 2301, OS thread handle 140128113583872, query id 9113400 10.0.1.12 laravel Sending data
{CLAIM}
{P57}*** WAITING FOR THIS LOCK TO BE GRANTED:

RECORD LOCKS space id 412 page no 4 n bits 96 index jobs_queue_index of table `laravel`.`jobs` trx id 41722400 lock_mode X waiting
Record lock, heap no 12 PHYSICAL RECORD: n_fields 2; compact format; info bits 0
 0: len 7; hex 64656661756c74; asc default;;

{P57}*** WE ROLL BACK TRANSACTION (2)
"""


def one(text: str):  # type: ignore[no-untyped-def]
    (dl,) = list(iter_deadlocks(text.splitlines()))
    return dl


def test_too_deep_victim_is_the_printed_transaction_by_the_printers_rule() -> None:
    dl = one(TOO_DEEP_57)
    assert dl.too_deep and not dl.ambiguous and dl.printed_victim == 2
    assert dl.victim == 1 and dl.victim_source == "too-deep" and not dl.victim_inferred
    assert dl.transactions[0].victim and dl.transactions[0].thread_id == 2301
    assert "printer's rule" in dl.victim_evidence
    rec = deadlock_record(dl)
    assert rec.victim == 1 and "printer's rule" in str(rec.victim_evidence)
    d = diagnose(dl)  # the queue diagnosis it had before issue 18.4
    assert d.pattern == "queue-claim-pileup" and d.rules == ("QU402",)
    assert "thread 2301" in d.explanation


def test_too_deep_in_status_text() -> None:
    body = TOO_DEEP_57.replace(P57, "").split("\n", 1)[1]
    text = ("------------------------\nLATEST DETECTED DEADLOCK\n------------------------\n"
            "2019-06-12 08:15:42 0x7f71d8b1b700\n" + body +
            "------------\nTRANSACTIONS\n------------\n")
    dl = parse_status(text).deadlock
    assert dl is not None and dl.victim == 1 and dl.victim_source == "too-deep"


def test_mariadb_pasted_without_header_trailing_blanks() -> None:
    text = (PUB / "mariadb-no-header-trailing-spaces.txt").read_text()
    for dls in (list(iter_deadlocks(text.splitlines())),
                list(iter_deadlocks_bytes([text.encode()]))):
        (dl,) = dls
        assert dl.at == "2024-09-27 18:01:00" and not dl.ambiguous
        assert [t.trx_id for t in dl.transactions] == ["28480029", "28480030"]
        assert [t.thread_id for t in dl.transactions] == [901455, 901452]
        assert [(t.user, t.host) for t in dl.transactions] == [("root", "172.19.0.1")] * 2
        assert dl.transactions[0].query == (
            "select targettabl0_.id as id1_184_, targettabl0_.col1 as col2_184_ from "
            "test.target_table targettabl0_ where targettabl0_.col1=50 for update")
        # (0): MariaDB printed no victim; inferred, and flagged as such
        assert dl.printed_victim == 0 and dl.victim_inferred and dl.victim_source == "weight"
        assert {(lk.n, lk.waiting, lk.mode, lk.special, lk.heap_nos[:1]) for lk in dl.locks} == {
            (1, True, "X", "rec but not gap", (2,)), (2, False, "X", "rec but not gap", (2,)),
            (2, True, "X", "rec but not gap", (6,)), (1, False, "X", "rec but not gap", (6,))}
        assert [t.blocked_by for t in dl.transactions] == [2, 1]
        assert dl.unparsed == ()


def test_mariadb_conflicting_with_keeps_the_waiters_own_s_lock() -> None:
    text = (PUB / "mariadb-own-s-lock-conflicting.txt").read_text()
    dl = parse_status(text).deadlock
    assert dl is not None and dl.victim == 1 and dl.victim_source == "printed"
    held = {(lk.n, lk.mode) for lk in dl.locks if not lk.waiting}
    assert held == {(1, "S"), (2, "S")}  # both sides hold S: the text shows it
    assert {(lk.n, lk.mode) for lk in dl.locks if lk.waiting} == {(1, "X"), (2, "X")}
    assert all(lk.table == "point" and lk.db is None for lk in dl.locks)
    # the author elided dumps ("...") and the host: counted, not parsed as data
    assert any("elided" in x for x in dl.inconsistencies) and dl.unparsed == ()
    assert dl.transactions[0].user is None and dl.transactions[0].host == "아이피"
    assert dl.transactions[1].user is None  # "Updating" is the state, not a user
    assert diagnose(dl).pattern == "lock-upgrade"


def test_published_mysql_status_multiline_statements() -> None:
    text = (PUB / "mysql-okcoin-status.txt").read_text()
    dl = parse_status(text).deadlock
    assert dl is not None and dl.victim == 2 and not dl.ambiguous and dl.unparsed == ()
    t1, t2 = dl.transactions
    assert (t1.trx_id, t1.thread_id, t1.user, t1.host) == (
        "8912811226", 1118382, "okcoin", "10.254.104.178")
    assert (t2.trx_id, t2.thread_id, t2.undo_entries, t2.lock_structs) == (
        "8912811219", 1118752, 4, 7)
    assert " ".join((t2.query or "").split()) == (
        "update otc_merchant_audit SET modify_date = '2024-08-13 09:36:09.876' , deleted = 1 "
        "WHERE ( user_id = 7000000000123104 and deleted = 0 and id <> 2540 )")
    assert {(lk.n, lk.waiting, lk.index, lk.special) for lk in dl.locks} == {
        (1, True, "idx_uid", None), (2, False, "idx_uid", "rec but not gap"),
        (2, True, "idx_uid", None)}
    assert [t.blocked_by for t in dl.transactions] == [2, 1]


# --- hand-edited reports ---------------------------------------------------------------

LOG57 = (Path(__file__).parent / "fixtures" / "innodb" / "variants"
         / "mysql57-laravel-jobs-cut-delete.log").read_text()


def test_redacted_lock_ids_keep_the_printed_victim() -> None:
    want = one(LOG57)
    text = LOG57.replace("trx id 41722335 ", "trx id XXXX ").replace(
        "trx id 41722336 ", "trx id 41799999 ")
    dl = one(text)
    assert not dl.ambiguous and dl.victim == want.victim == 1
    assert len(dl.locks) == len(want.locks)
    assert any("redacted" in x for x in dl.inconsistencies)


def test_redacted_headers_and_threads() -> None:
    text = (LOG57.replace("TRANSACTION 41722335,", "TRANSACTION XXXX,")
            .replace("MySQL thread id 2240,", "MySQL thread id XXX,"))
    dl = one(text)
    assert not dl.ambiguous and dl.victim == 1
    assert dl.transactions[0].trx_id == "XXXX" and dl.transactions[0].thread_id is None
    assert dl.transactions[0].user == "laravel"


def test_hand_mangled_lock_lines_still_read() -> None:
    want = one(LOG57)
    text = LOG57.replace("index jobs_queue_index of", "index`jobs_queue_index` of").replace(
        " trx id ", " trx  id ")
    dl = one(text)
    assert not dl.ambiguous and dl.unparsed == ()
    assert [(lk.n, lk.index, lk.waiting) for lk in dl.locks] == [
        (lk.n, lk.index, lk.waiting) for lk in want.locks]


def test_a_lock_line_the_grammar_cannot_read_is_named() -> None:
    text = LOG57.replace("RECORD LOCKS space id 412 page no 4 n bits 96 index jobs_queue_index",
                         "RECORD LOCKS space ??? garbled", 1)
    dl = one(text)
    assert any(x.startswith("RECORD LOCKS space ???") for x in dl.unparsed)
    assert deadlock_record(dl).unparsed


def test_mysql8018_duplicate_waiting_lock_under_holds_is_kept_as_held() -> None:
    p = "2024-05-02T15:58:22.100782Z 19 [Note] [MY-012469] [InnoDB] "
    lock = ("RECORD LOCKS space id 5 page no 4 n bits 72 index PRIMARY of table `test`.`t` "
            "trx id {t} lock_mode X locks rec but not gap{w}")

    def trx(n: int, t: int, hold_waiting: bool) -> str:
        return (f"{p}*** ({n}) TRANSACTION:\nTRANSACTION {t}, ACTIVE 3 sec starting index read\n"
                f"mysql tables in use 1, locked 1\nLOCK WAIT 3 lock struct(s), heap size 1128, "
                f"2 row lock(s)\nMySQL thread id {n + 10}, OS thread handle 1, query id 9 "
                f"localhost app updating\nUPDATE t SET v = v + 1 WHERE id = {n}\n"
                f"{p}*** ({n}) HOLDS THE LOCK(S):\n"
                + lock.format(t=t, w=" waiting" if hold_waiting else "") + "\n"
                f"{p}*** ({n}) WAITING FOR THIS LOCK TO BE GRANTED:\n"
                + lock.format(t=t, w=" waiting") + "\n")
    text = (f"{p[:-29]}[Note] [MY-012468] [InnoDB] Transactions deadlock detected, dumping "
            f"detailed information.\n{trx(1, 2107, True)}{trx(2, 2108, False)}"
            f"{p}*** WE ROLL BACK TRANSACTION (2)\n")
    dl = one(text)
    assert not dl.ambiguous and dl.victim == 2
    assert sorted((lk.n, lk.waiting) for lk in dl.locks) == [
        (1, False), (1, True), (2, False), (2, True)]


def test_spoofed_statement_lists_only_agreed_participants() -> None:
    fake = ("*** (1) WAITING FOR THIS LOCK TO BE GRANTED:\n"
            "RECORD LOCKS space id 1 page no 3 n bits 72 index PRIMARY of table `evil`.`t` "
            "trx id 41722335 lock_mode X locks rec but not gap waiting\n"
            "*** (2) TRANSACTION:\nTRANSACTION 999, ACTIVE 5 sec starting index read\n"
            "MySQL thread id 666, OS thread handle 1, query id 1 evilhost 6.6.6.6 mallory "
            "updating\nupdate evil set x = 1\n*** WE ROLL BACK TRANSACTION (2)\n")
    text = LOG57.replace("delete from laravel.jobs\n", "delete from laravel.jobs\n" + fake)
    dl = one(text)
    assert dl.ambiguous and dl.victim is None
    assert [(t.n, t.trx_id, t.thread_id, t.user) for t in dl.transactions] == [
        (1, "41722335", 2240, "laravel")]
    assert all(lk.db != "evil" for lk in dl.locks)
    shown = "\n".join(dl.unverified)
    assert "mallory" in shown and "TRANSACTION 41722336" in shown  # the rest, as text
    rec = deadlock_record(dl)
    assert rec.diagnosis.pattern == "ambiguous"
    assert rec.unverified


def test_trx_ids_are_checked_against_the_servers_counter() -> None:
    text = (Path(__file__).parent / "fixtures" / "innodb" / "mariadb-laravel-queue-index.txt"
            ).read_text()
    st = parse_status(text)
    assert st.deadlock is not None and st.deadlock.inconsistencies == ()
    forged = text.replace(f"Trx id counter {st.trx_id_counter}", "Trx id counter 95610")
    dl = parse_status(forged).deadlock
    assert dl is not None and dl.victim == st.deadlock.victim  # kept: noted, not fatal
    assert dl.inconsistencies == (
        "trx id (1) 95662 not below the server's trx id counter 95610: not as the server "
        "printed it",)


def test_every_record_here_matches_the_json_schema() -> None:
    from schemas import validate

    texts = [TOO_DEEP_57, LOG57,
             LOG57.replace("trx id 41722335 ", "trx id XXXX "),
             LOG57.replace("RECORD LOCKS space id 412 page no 4", "RECORD LOCKS space ???", 1),
             LOG57.replace("delete from laravel.jobs\n", "delete from laravel.jobs\n"
                           "*** (2) TRANSACTION:\nTRANSACTION 999, ACTIVE 5 sec\n")]
    texts += [p.read_text() for p in sorted(PUB.glob("*.txt"))]
    recs = [deadlock_record(dl) for t in texts for dl in iter_deadlocks(t.splitlines())]
    assert len(recs) == len(texts)
    assert any(r.unparsed for r in recs) and any(r.inconsistencies for r in recs)
    assert any(r.unverified for r in recs)
    validate({"deadlocks": [r.to_json() for r in recs]}, "deadlocks")


def test_published_mysql8_report_cut_short_gives_what_it_holds() -> None:
    text = (PUB / "mysql8-hibernate-cut.txt").read_text()
    for dl in (parse_status(text).deadlock, one(text)):
        assert dl is not None and not dl.ambiguous and dl.unparsed == ()
        assert dl.victim is None and dl.truncated and dl.at == "2022-03-24 00:05:03"
        (t,) = dl.transactions
        assert (t.trx_id, t.thread_id, t.user, t.host, t.ip, t.state) == (
            "2000", 54, "root", "localhost", "127.0.0.1", "inserting")
        assert (t.undo_entries, t.lock_structs, t.row_locks) == (2, 6, 3)
        assert t.query is not None and t.query.startswith("/* mysql-connector-java-8.0.27")
        assert t.query.endswith("values (1648076703544, '79', '2000', 79)")
        assert {(lk.n, lk.waiting, lk.mode, lk.index, lk.special, lk.insert_intention,
                 lk.heap_nos) for lk in dl.locks} == {
            (1, False, "S", "invoice_id", None, False, (1,)),
            (1, True, "X", "invoice_id", "gap", True, (1,))}
        assert all(lk.table == "sequenceid" and lk.db is None for lk in dl.locks)


def test_printed_threads_checked_against_the_live_thread_list() -> None:
    from dbwatch.deadlocks.record import check_threads
    from dbwatch.snapshot.my import MyThread

    dl = one(LOG57)  # (1) thread 2240 laravel trx 41722335, (2) thread 2245 laravel trx 41722336
    same = [MyThread.from_row({"thread_id": 2245, "user": "laravel", "trx_id": "41722336"})]
    assert check_threads(dl, same) is dl
    other = [MyThread.from_row({"thread_id": 2240, "user": "reporting", "trx_id": None}),
             MyThread.from_row({"thread_id": 3001, "user": "laravel", "trx_id": "41722336"})]
    notes = check_threads(dl, other).inconsistencies
    assert notes == (
        "(1) thread 2240 is printed as user laravel, but that thread is connected now as reporting",
        "(2) trx 41722336 is printed in thread 2245, but it runs now in thread 3001")
