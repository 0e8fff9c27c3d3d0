"""Query text is data: report-like lines inside a query never make a victim (issue 18.4).

Pure tests on fixtures; tests/live/test_deadlock_spoofing_live.py does the same through real
query texts on a throwaway MariaDB.
"""
from __future__ import annotations

import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbwatch.deadlocks.diagnosis import diagnose
from dbwatch.parsers.errorlog import iter_deadlocks
from dbwatch.parsers.innodb_status import parse_status

VAR = Path(__file__).parent / "fixtures" / "innodb" / "variants"
FIX = Path(__file__).parent / "fixtures" / "innodb"
LOG = (VAR / "mysql57-laravel-jobs-cut-delete.log").read_text()
QUERY = "delete from laravel.jobs\n"

FAKE_TAIL = (
    "*** (1) WAITING FOR THIS LOCK TO BE GRANTED:\n"
    "RECORD LOCKS space id 1 page no 3 n bits 72 index PRIMARY of table `evil`.`t` "
    "trx id 41722335 lock_mode X locks rec but not gap waiting\n"
    "*** (2) TRANSACTION:\n"
    "TRANSACTION 999, ACTIVE 5 sec starting index read\n"
    "MySQL thread id 666, OS thread handle 1, query id 1 evilhost 6.6.6.6 mallory updating\n"
    "update evil set x = 1\n"
    "*** (2) HOLDS THE LOCK(S):\n"
    "RECORD LOCKS space id 1 page no 3 n bits 72 index PRIMARY of table `evil`.`t` "
    "trx id 999 lock_mode X locks rec but not gap\n"
    "*** WE ROLL BACK TRANSACTION (2)\n"
)
FAKE_REPORT = (
    "2019-06-12T08:15:42.318300Z 2245 [Note] InnoDB: Transactions deadlock detected, "
    "dumping detailed information.\n*** (1) TRANSACTION:\n"
    "TRANSACTION 41722335, ACTIVE 0 sec starting index read\n"
    "MySQL thread id 2240, OS thread handle 1, query id 1 h 10.0.1.12 laravel updating\n"
    "select 1\n" + FAKE_TAIL
)


def no_fabricated_victim(dls) -> None:  # type: ignore[no-untyped-def]
    for dl in dls:
        v = dl.trx(dl.victim) if dl.victim is not None else None
        assert v is None or v.thread_id != 666, dl
        if any(t.thread_id == 666 for t in dl.transactions):
            assert dl.ambiguous and dl.victim is None
            assert diagnose(dl).pattern == "ambiguous"


def test_fake_sections_in_a_query_make_the_report_ambiguous() -> None:
    dls = list(iter_deadlocks(LOG.replace(QUERY, QUERY + FAKE_TAIL).splitlines()))
    assert len(dls) == 1
    assert dls[0].ambiguous and dls[0].victim is None
    no_fabricated_victim(dls)


def test_fake_whole_report_in_a_query() -> None:
    dls = list(iter_deadlocks(LOG.replace(QUERY, QUERY + FAKE_REPORT).splitlines()))
    assert dls and all(d.ambiguous for d in dls)
    no_fabricated_victim(dls)


def test_fake_victim_line_alone() -> None:
    text = LOG.replace(QUERY, QUERY + "*** WE ROLL BACK TRANSACTION (2)\n")
    dls = list(iter_deadlocks(text.splitlines()))
    assert len(dls) == 1 and dls[0].ambiguous and dls[0].victim is None


def test_status_text_injection_in_the_deadlock_section() -> None:
    text = (FIX / "mariadb-laravel-queue-index.txt").read_text()
    dl0 = parse_status(text).deadlock
    assert dl0 is not None
    q = dl0.transactions[0].query or ""
    first = q.splitlines()[0]
    forged = text.replace(first, first + "\n" + FAKE_TAIL, 1)
    dl = parse_status(forged).deadlock
    assert dl is not None and dl.ambiguous and dl.victim is None


def test_forged_deadlock_section_inside_the_transaction_list() -> None:
    text = (FIX / "mariadb-laravel-queue-index.txt").read_text()
    a = text.index("LATEST DETECTED DEADLOCK")
    b = text.index("------------\nTRANSACTIONS")
    no_dl = text[: a - 25] + text[b:]
    assert parse_status(no_dl).deadlock is None
    section = "------------------------\n" + text[a:b]
    forged = no_dl.replace("---TRANSACTION ", section + "---TRANSACTION ", 1)
    assert parse_status(forged).deadlock is None


# --- tolerance never invents a deadlock -----------------------------------------------------

NOISE = [
    "2024-05-02T10:00:00.000000Z 5 [Note] [MY-010051] [Server] Event Scheduler: scheduler thread started",
    "2026-11-22  2:01:37 0 [Note] InnoDB: Buffer pool(s) load completed at 261122  2:01:37",
    "> quoted reply line", "    indented code line", "TRANSACTION 5, ACTIVE 3 sec",
    "RECORD LOCKS space id 1 page no 3 n bits 72 index PRIMARY of table `a`.`b` trx id 5 lock_mode X",
    "*** WAITING FOR THIS LOCK TO BE GRANTED:", "*** (2) TRANSACTION:", "------------",
    "MySQL thread id 5, OS thread handle 1, query id 1 localhost root", "InnoDB: hello",
    "Nov 22 02:01:37 db1 mariadbd[812]: 2026-11-22  2:01:37 0 [Note] hello", "\r", "",
    "*** WE ROLL BACK TRANSACTION (1)", "*** (1) HOLDS THE LOCK(S):",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(NOISE), st.text(max_size=60)), max_size=120))
def test_noise_without_a_report_start_is_never_a_deadlock(lines: list[str]) -> None:
    lines = [ln for ln in lines if "deadlock detected" not in ln.lower()
             and "LATEST DETECTED DEADLOCK" not in ln
             and "(1)TRANSACTION" not in ln.replace(" ", "")]
    assert list(iter_deadlocks(lines)) == []


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(NOISE[:3]), max_size=20), st.integers(0, 40))
def test_interleaved_other_messages_change_nothing(noise: list[str], at: int) -> None:
    base = LOG.splitlines()
    (want,) = list(iter_deadlocks(base))
    # other threads' lines anywhere (thread 5/0 differ from the reporting thread 2245)
    mixed = base[:at] + [n for n in noise if n.startswith("20")] + base[at:]
    got = list(iter_deadlocks(mixed))
    assert [(d.victim, [t.trx_id for t in d.transactions]) for d in got] == [
        (want.victim, [t.trx_id for t in want.transactions])]


# --- any injection through either query: never a victim of the attacker's making ---------

POOL = [
    "*** (1) TRANSACTION:", "*** (2) TRANSACTION:", "*** (3) TRANSACTION:",
    "TRANSACTION 41722335, ACTIVE 5 sec starting index read",
    "TRANSACTION 41722336, ACTIVE 5 sec starting index read",
    "TRANSACTION 999, ACTIVE 5 sec starting index read",
    "MySQL thread id 666, OS thread handle 1, query id 1 evilhost 6.6.6.6 mallory updating",
    "update evil set x = 1",
    "*** (1) WAITING FOR THIS LOCK TO BE GRANTED:", "*** (2) WAITING FOR THIS LOCK TO BE GRANTED:",
    "*** WAITING FOR THIS LOCK TO BE GRANTED:", "*** (1) HOLDS THE LOCK(S):",
    "*** (2) HOLDS THE LOCK(S):", "*** CONFLICTING WITH:",
    "RECORD LOCKS space id 1 page no 3 n bits 72 index PRIMARY of table `evil`.`t` trx id 999 "
    "lock_mode X locks rec but not gap waiting",
    "RECORD LOCKS space id 1 page no 3 n bits 72 index PRIMARY of table `evil`.`t` trx id "
    "41722335 lock_mode X locks rec but not gap",
    "RECORD LOCKS space id 1 page no 3 n bits 72 index PRIMARY of table `evil`.`t` trx id "
    "41722336 lock_mode X locks rec but not gap waiting",
    "*** WE ROLL BACK TRANSACTION (1)", "*** WE ROLL BACK TRANSACTION (2)",
    "*** WE ROLL BACK TRANSACTION (3)",
    "2019-06-12T08:15:42.318300Z 2245 [Note] InnoDB: Transactions deadlock detected, dumping "
    "detailed information.",
    "2019-06-12T08:15:42.318301Z 2245 [Note] InnoDB: *** (2) TRANSACTION:",
    "2019-06-12T08:15:42.318390Z 2245 [Note] InnoDB: *** WE ROLL BACK TRANSACTION (2)",
    "------------", "LATEST DETECTED DEADLOCK",
]
CLAIM_Q = LOG.splitlines()[[i for i, ln in enumerate(LOG.splitlines())
                            if ln.startswith("select * from `jobs`")][0]]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(POOL), min_size=1, max_size=25), st.booleans())
def test_any_injection_never_names_the_attackers_victim(fake: list[str], first: bool) -> None:
    target = QUERY if first else CLAIM_Q + "\n"
    text = LOG.replace(target, target + "\n".join(fake) + "\n", 1)
    dls = list(iter_deadlocks(text.splitlines()))
    for dl in dls:
        v = dl.trx(dl.victim) if dl.victim is not None else None
        assert v is None or v.thread_id in (2240, 2245), (fake, dl)
        if v is not None:  # a named victim: the real one, from an unambiguous report
            assert not dl.ambiguous and v.thread_id == 2240
