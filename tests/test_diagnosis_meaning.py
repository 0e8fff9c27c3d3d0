"""Diagnosis by what the transactions do (issue 14.2), one row per rule of the decision table.

Reports are generated in MySQL 5.7 error-log form from (statement, index, table) per side;
the same decision must hold whichever index, whichever victim, cut or parameterised text,
qualified or not; unrelated deadlocks are never queue problems.
"""
from __future__ import annotations

import pytest

from dbwatch.deadlocks.diagnosis import diagnose
from dbwatch.parsers.errorlog import iter_deadlocks

CLAIM = ("select * from `jobs` where `queue` = ? and ((`reserved_at` is null and "
         "`available_at` <= ?) or (`reserved_at` <= ?)) order by `id` asc limit 1 for update")
CLAIM_CUT = "select * from jobs where queue = ? and ((reserved_at is null and availab"
DELETE = "delete from `jobs` where `id` = ?"
DELETE_CUT = "delete from laravel.jobs"
FETCH = "select * from `jobs` where `id` = ? limit 1 for update"
RESERVE = "update `jobs` set `reserved_at` = ?, `attempts` = ? where `id` = ?"
COMPLETE = "UPDATE jobs SET state = 'done', finished_at = NOW() WHERE id = 35"


def report(q1: str | None, q2: str | None, victim: int = 1, index1: str = "jobs_queue_index",
           index2: str = "PRIMARY", table: str = "`laravel`.`jobs`", too_deep: bool = False) -> str:
    def trx(n: int, tid: int, q: str | None, idx: str, holds: str) -> str:
        query = f"{q}\n" if q is not None else ""
        hold = (f"2019-06-12T08:15:42.3Z 9 [Note] InnoDB: *** ({n}) HOLDS THE LOCK(S):\n"
                f"RECORD LOCKS space id 4 page no 4 n bits 96 index {holds} of table {table} "
                f"trx id {tid} lock_mode X locks rec but not gap\n") if n == 2 else ""
        return (f"2019-06-12T08:15:42.3Z 9 [Note] InnoDB: *** ({n}) TRANSACTION:\n"
                f"TRANSACTION {tid}, ACTIVE 0 sec starting index read\n"
                f"mysql tables in use 1, locked 1\n"
                f"LOCK WAIT 2 lock struct(s), heap size 1136, 1 row lock(s)\n"
                f"MySQL thread id {tid - 100}, OS thread handle 1, query id 5 10.0.0.1 app updating\n"
                f"{query}{hold}"
                f"2019-06-12T08:15:42.3Z 9 [Note] InnoDB: *** ({n}) WAITING FOR THIS LOCK TO BE GRANTED:\n"
                f"RECORD LOCKS space id 4 page no {3 + n} n bits 96 index {idx} of table {table} "
                f"trx id {tid} lock_mode X locks rec but not gap waiting\n")
    head = "2019-06-12T08:15:42.3Z 9 [Note] InnoDB: Transactions deadlock detected, dumping detailed information.\n"
    if too_deep:
        head += ("2019-06-12T08:15:42.3Z 9 [Note] InnoDB: TOO DEEP OR LONG SEARCH IN THE LOCK "
                 "TABLE WAITS-FOR GRAPH, WE WILL ROLL BACK FOLLOWING TRANSACTION\n")
        return head + trx(1, 501, q1, index1, index2) + (
            "2019-06-12T08:15:42.3Z 9 [Note] InnoDB: *** WE ROLL BACK TRANSACTION (1)\n")
    return (head + trx(1, 501, q1, index1, index2) + trx(2, 502, q2, index2, index1)
            + f"2019-06-12T08:15:42.3Z 9 [Note] InnoDB: *** WE ROLL BACK TRANSACTION ({victim})\n")


def diag(text: str):  # type: ignore[no-untyped-def]
    (dl,) = list(iter_deadlocks(text.splitlines()))
    return diagnose(dl)


CASES = {
    # id: (report kwargs, pattern, rules)
    "laravel-5.7-cut-delete": (dict(q1=DELETE_CUT, q2=CLAIM), "queue-claim-vs-delete", ("QU401",)),
    "claim-victim": (dict(q1=DELETE, q2=CLAIM, victim=2), "queue-claim-vs-delete", ("QU401",)),
    "primary-index-only": (dict(q1=CLAIM, q2=DELETE, index1="PRIMARY"), "queue-claim-vs-delete",
                           ("QU401",)),
    "cut-claim": (dict(q1=DELETE, q2=CLAIM_CUT), "queue-claim-vs-delete", ("QU401",)),
    "literal-unqualified": (dict(q1="DELETE FROM jobs WHERE id = 35", q2=CLAIM.replace("?", "'default'"),
                                 table="`jobs`"), "queue-claim-vs-delete", ("QU401",)),
    "fetch-side": (dict(q1=FETCH, q2=CLAIM), "queue-claim-vs-delete", ("QU401",)),
    "completing-update": (dict(q1=COMPLETE, q2=CLAIM), "queue-claim-vs-delete", ("QU402",)),
    "reserve-vs-delete": (dict(q1=RESERVE, q2=DELETE), "queue-claim-vs-delete", ("QU401",)),
    "legacy-index-claims": (dict(q1=RESERVE, q2=CLAIM, index1="jobs_queue_reserved_at_index",
                                 index2="jobs_queue_reserved_at_index"), "queue-legacy-index",
                            ("QU301",)),
    "legacy-index-with-delete": (dict(q1=DELETE, q2=CLAIM, index1="jobs_queue_reserved_at_index"),
                                 "queue-claim-vs-delete", ("QU401", "QU301")),
    "two-claims": (dict(q1=CLAIM, q2=CLAIM), "queue-claim-vs-claim", ("QU402",)),
    "too-deep-claim": (dict(q1=CLAIM, q2=None, too_deep=True), "queue-claim-pileup", ("QU402",)),
    "text-missing": (dict(q1=None, q2=CLAIM), "queue-unclear", ()),
    "renamed-table-by-shape": (dict(q1="delete from tasks where id = ?",
                                    q2="select * from tasks where run_at <= ? and locked_at is null "
                                       "order by priority, run_at limit 5 for update",
                                    table="`app`.`tasks`"), "queue-claim-vs-delete", ("QU401",)),
    "other-queue-library": (dict(q1="DELETE FROM good_jobs WHERE id = $1",
                                 q2="SELECT id FROM good_jobs WHERE queue_name = 'x' AND "
                                    "finished_at IS NULL ORDER BY priority LIMIT 1 FOR UPDATE",
                                 table="`app`.`good_jobs`"), "queue-claim-vs-delete", ("QU401",)),
    # issue 22: meaning, not Laravel's one shape
    "messenger-delete-by-key-vs-by-id": (
        dict(q1="DELETE FROM messenger_messages WHERE message_key = 'a1f3'",
             q2="DELETE FROM messenger_messages WHERE id = 42",
             table="`app`.`messenger_messages`", index1="uniq_message_key", index2="PRIMARY"),
        "queue-delete-vs-delete", ()),
    "generic-queue-two-delete-paths": (
        dict(q1="delete from outbound_queue where id = ?",
             q2="delete from outbound_queue where dedupe_key = ?",
             table="`app`.`outbound_queue`", index1="PRIMARY", index2="outbound_queue_dedupe"),
        "queue-delete-vs-delete", ()),
    "purge-vs-claim": (
        dict(q1="DELETE FROM jobs WHERE finished_at < NOW() - INTERVAL 7 DAY", q2=CLAIM),
        "queue-maintenance-vs-workers", ("QU402",)),
    "archive-vs-delete": (
        dict(q1=DELETE, q2="delete from solid_queue_jobs where finished_at is not null and "
             "finished_at < '2024-05-01' limit 500", table="`app`.`solid_queue_jobs`"),
        "queue-maintenance-vs-workers", ()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_queue_decisions(case: str) -> None:
    kw, pattern, rules = CASES[case]
    d = diag(report(**kw))  # type: ignore[arg-type]
    assert (d.pattern, d.rules) == (pattern, rules), d.explanation
    assert d.is_queue_problem


NOT_QUEUE = {
    "orders-delete-vs-locking-select": dict(
        q1="delete from orders where id = ?",
        q2="select * from orders where customer_id = ? order by id limit 1 for update",
        table="`shop`.`orders`", index1="orders_customer_index"),
    "failed-jobs": dict(q1="delete from failed_jobs where id = ?",
                        q2="select * from failed_jobs where uuid = ? for update",
                        table="`app`.`failed_jobs`"),
    "opposite-order-updates": dict(q1="update accounts set balance = balance - 1 where id = 1",
                                   q2="update accounts set balance = balance + 1 where id = 2",
                                   table="`bank`.`accounts`", index1="PRIMARY"),
}


@pytest.mark.parametrize("case", sorted(NOT_QUEUE))
def test_unrelated_deadlocks_are_never_queue_problems(case: str) -> None:
    d = diag(report(**NOT_QUEUE[case]))  # type: ignore[arg-type]
    assert not d.is_queue_problem and d.rules == ()
    assert "queue" not in d.explanation.lower() and "QU" not in d.fix


def test_fixes_use_the_library_words() -> None:
    kw, _, _ = CASES["messenger-delete-by-key-vs-by-id"]
    d = diag(report(**kw))  # type: ignore[arg-type]
    assert "Symfony Messenger" in d.fix and "by id" in d.fix and "1213" in d.fix
    assert "uniq_message_key" in d.explanation and "PRIMARY" in d.explanation
    kw, _, _ = CASES["archive-vs-delete"]
    d = diag(report(**kw))  # type: ignore[arg-type]
    assert "Solid Queue" in d.fix and "batches" in d.fix
    kw, _, _ = CASES["purge-vs-claim"]
    d = diag(report(**kw))  # type: ignore[arg-type]
    assert "SKIP LOCKED" in d.fix and "finished or old jobs" in d.explanation


def test_unclear_says_the_text_is_not_enough() -> None:
    d = diag(report(q1=None, q2=CLAIM))
    assert "not enough" in d.explanation and "no statement printed" in d.explanation
