"""Server-wide reads the daemon shares between a server's targets (pg.sessions, the InnoDB
status): what every target derives from one the same way is derived once per read, and each
target still sees only its own database's part; a new read is never answered from the last
one. Hand-built snapshots, no database (the PostgreSQL models: test_models_once.py)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from dbwatch.catalogue import load_catalogue
from dbwatch.config import Config
from dbwatch.deadlocks import record
from dbwatch.evaluate import evaluate
from dbwatch.snapshot import Snapshot, build_section

CAT = load_catalogue()
DEADLOCK = """\
{at} 0x7f0fd00546c0
*** (1) TRANSACTION:
TRANSACTION 9401, ACTIVE 0 sec starting index read
mysql tables in use 1, locked 1
LOCK WAIT 3 lock struct(s), heap size 1128, 2 row lock(s)
MariaDB thread id 91, OS thread handle 139705891243712, query id 146104 127.0.0.1 app Sending data
select * from `jobs` where `queue` = 'default' and `reserved_at` is null order by `id` asc limit 1 for update
*** WAITING FOR THIS LOCK TO BE GRANTED:
RECORD LOCKS space id 61 page no 3 n bits 320 index PRIMARY of table `{db}`.`jobs` trx id 9401 lock_mode X locks rec but not gap waiting
*** CONFLICTING WITH:
RECORD LOCKS space id 61 page no 3 n bits 320 index PRIMARY of table `{db}`.`jobs` trx id 9402 lock_mode X locks rec but not gap
*** (2) TRANSACTION:
TRANSACTION 9402, ACTIVE 0 sec updating or deleting
mysql tables in use 1, locked 1
LOCK WAIT 3 lock struct(s), heap size 1128, 2 row lock(s), undo log entries 1
MariaDB thread id 92, OS thread handle 139705535284928, query id 146105 127.0.0.1 app Updating
delete from `jobs` where `id` = 5
*** WAITING FOR THIS LOCK TO BE GRANTED:
RECORD LOCKS space id 61 page no 4 n bits 816 index jobs_queue_index of table `{db}`.`jobs` trx id 9402 lock_mode X locks rec but not gap waiting
*** CONFLICTING WITH:
RECORD LOCKS space id 61 page no 4 n bits 816 index jobs_queue_index of table `{db}`.`jobs` trx id 9401 lock_mode X
*** WE ROLL BACK TRANSACTION (2)
"""


@pytest.fixture
def records(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every deadlock diagnosed for MY102 (deadlock_record), counted."""
    count: Counter[str] = Counter()
    make = record.deadlock_record

    def counting(dl: Any) -> Any:
        count["deadlock_record"] += 1
        return make(dl)

    monkeypatch.setattr(record, "deadlock_record", counting)
    return count


def _status(at: str, db: str) -> object:
    """One shared read of SHOW ENGINE INNODB STATUS, built as the single flight builds it."""
    text = DEADLOCK.format(at=at, db=db)
    return build_section("my.innodb_status", {"at": "2026-11-22 10:00:00", "deadlock": text})


def _my102(scope: str, status: object, counters: object) -> set[str]:
    snap = Snapshot(target=scope, engine="mariadb", server_version="10.11", version_num=101100,
                    taken_at=1_800_000_000.0, scope=scope,
                    sections={"my.innodb_status": status, "my.innodb_counters": counters})
    ev = evaluate(snap, CAT, Config())
    return {f.subject for f in ev.findings if f.rule == "MY102"}


def test_my102_diagnoses_a_shared_status_once_and_scopes_it(records: Counter[str]) -> None:
    counters = build_section("my.innodb_counters", {"innodb_deadlocks": 3})
    status = _status("2026-11-22 09:00:00", "shop")
    for scope in ("billing", "shop", "billing", "shop"):  # both orders
        got = _my102(scope, status, counters)
        assert got == ({"deadlock 2026-11-22 09:00:00"} if scope == "shop" else set()), scope
    assert records["deadlock_record"] == 1  # once per read, whoever asked first
    # the next read: another deadlock, in the other schema; nothing of the last one kept
    status = _status("2026-11-22 09:30:00", "billing")
    assert _my102("shop", status, counters) == set()
    assert _my102("billing", status, counters) == {"deadlock 2026-11-22 09:30:00"}
    assert records["deadlock_record"] == 2


def test_a_shared_record_answers_scope_questions_like_a_fresh_one() -> None:
    status = _status("2026-11-22 09:00:00", "shop")
    dl = status.deadlock  # type: ignore[attr-defined]
    shared, fresh = record.deadlock_record(dl), record.deadlock_record(dl)
    for scope in (None, "shop", "billing", "shop"):
        assert shared.in_scope(scope) == fresh.in_scope(scope)
    assert shared.databases() == {"shop"}
    shared.databases().add("billing")  # a caller's copy: the record is not changed
    assert not shared.in_scope("billing")


def test_my101_builds_a_shared_lock_graph_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """my.lock_waits is server-wide (MY101 is not scoped: SPEC §3): one graph per read, the
    same findings for each target; the next read (the wait ended) shows none."""
    from dbwatch.checks.lockgraph import LockGraph

    built: Counter[str] = Counter()
    from_pairs = LockGraph.from_pairs.__func__  # type: ignore[attr-defined]

    def counting(cls: type, pairs: Any) -> Any:
        built["graph"] += 1
        return from_pairs(cls, pairs)

    monkeypatch.setattr(LockGraph, "from_pairs", classmethod(counting))
    wait = {"waiting_thread_id": 42, "waiting_trx_id": "4200", "blocking_thread_id": 40,
            "blocking_trx_id": "4000", "blocking_user": "cron", "blocking_host": "h:9",
            "blocking_command": "Sleep", "blocking_trx_seconds": 900, "wait_seconds": 600}

    def my101(scope: str, waits: object) -> set[str]:
        snap = Snapshot(target=scope, engine="mariadb", server_version="10.11",
                        version_num=101100, taken_at=1_800_000_000.0, scope=scope,
                        sections={"my.lock_waits": waits})
        return {f.subject for f in evaluate(snap, CAT, Config()).findings if f.rule == "MY101"}

    read = build_section("my.lock_waits", {"source": "lock_waits_innodb", "waits": [wait]})
    assert my101("shop", read) == my101("billing", read) == {"thread 42"}
    assert built["graph"] == 1
    ended = build_section("my.lock_waits", {"source": "lock_waits_innodb", "waits": []})
    assert my101("shop", ended) == set()
