"""Real PostgreSQL deadlock reports quoted in public GitHub issues (tests/fixtures/pglog/published,
sources in SOURCES.md), checked field by field: processes, who blocks whom, the victim, each
waited-for lock, each statement, the time."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbwatch.deadlocks.record import deadlock_record
from dbwatch.parsers.deadlock_model import Deadlock
from dbwatch.parsers.pg_deadlock import iter_pg_deadlocks

PUB = Path(__file__).parent / "fixtures" / "pglog" / "published"


def read(name: str) -> Deadlock:
    with open(PUB / name, encoding="utf-8") as fh:
        got = list(iter_pg_deadlocks(fh))
    assert len(got) == 1, got
    return got[0]


def ws(text: str | None) -> str:
    return " ".join((text or "").split())


# name: (at, [(pid, xid, blocked_by, mode, lock object, statement)], truncated)
CASES: dict[str, tuple[str | None, list[tuple[int, str | None, int, str, str, str | None]], bool]] = {
    "mozilla-service-map-5.log": (
        None,
        [
            (22301, "10754360", 2, "ShareLock", "transaction 10754518",
             "UPDATE host SET lastused = now() AT TIME ZONE 'utc' WHERE lower(hostname) = lower($1)"),
            (22350, "10754518", 1, "ShareLock", "transaction 10754360",
             "UPDATE host SET sysgroupid = (SELECT sysgroupid FROM sysgroup WHERE name ~* $1 LIMIT 1)"
             " WHERE hostname ~* $2"),
        ],
        False,
    ),
    "superdurable-dex-51.log": (
        "2023-10-18 14:53:56",
        [
            (14344, "4425", 2, "ShareLock", "transaction 4426",
             "SELECT id as process_execution_id, is_current, status, history_event_id_sequence, "
             "state_execution_sequence_maps, wait_to_complete FROM xdb_sys_process_executions "
             "WHERE id=$1 FOR UPDATE"),
            (14722, "4426", 1, "ShareLock", "transaction 4425",
             "UPDATE xdb_sys_async_state_executions SET version = CASE WHEN wait_until_status=1 OR "
             "execute_status=1 THEN version+1 ELSE version END, wait_until_status = CASE WHEN "
             "wait_until_status=1 THEN 5 ELSE wait_until_status END, execute_status = CASE WHEN "
             "execute_status=1 THEN 5 ELSE execute_status END WHERE process_execution_id=$1"),
        ],
        False,
    ),
    "dalibo-temboard-890.log": (
        "2021-01-21 12:58:34",
        [
            (4136, None, 2, "ShareLock", "relation 16820 of database 16566",
             "SELECT * FROM history_tables()"),
            (4178, None, 1, "RowExclusiveLock", "relation 16778 of database 16566",
             "INSERT INTO monitoring.metric_sessions_current VALUES "
             "('2021-01-21T12:55:29.121626+01:00', 8, 'template1', (NULL, 0, 0, 0, 0, 0, 0, 0, 0))"),
        ],
        False,
    ),
    "inmanta-core-2628.log": (  # the paste starts at DETAIL: the ERROR line is not in it
        "2021-01-07 11:37:47",
        [
            (24887, "8214739", 2, "ShareLock", "transaction 8214738",
             "DELETE FROM agent WHERE environment=$1"),
            (24891, "8214738", 1, "ShareLock", "transaction 8214739",
             "UPDATE agent SET last_failover=$1,id_primary=$2 WHERE environment=$3 AND name=$4"),
        ],
        False,
    ),
    "procrastinate-328.txt": (  # the client's copy: the waits, no statements (server log only)
        None,
        [
            (57350, "528284086", 2, "ShareLock", "transaction 528284087", None),
            (48792, "528284087", 1, "ShareLock", "transaction 528284086", None),
        ],
        False,
    ),
    "alertadengue-555.txt": (  # the client's copy inside a Python repr: `\n` escaped
        None,
        [
            (51305, "196410020", 2, "ShareLock", "transaction 196410021", None),
            (26458, "196410021", 1, "ShareLock", "transaction 196410020", None),
        ],
        False,
    ),
    "performancemonitor-2661.log": (  # statements on the line after `Process N:`
        "2026-08-26 22:25:24",
        [
            (1549, "808", 2, "ShareLock", "transaction 809",
             "BEGIN; UPDATE dl SET v=v+1 WHERE id=1; ... UPDATE dl SET v=v+1 WHERE id=2; COMMIT;"),
            (1556, "809", 1, "ShareLock", "transaction 808",
             "BEGIN; UPDATE dl SET v=v+1 WHERE id=2; ... UPDATE dl SET v=v+1 WHERE id=1; COMMIT;"),
        ],
        False,
    ),
    "blockscout-8368-cut.log": (  # RDS prefix (`...:[pid]:ERROR:`), cut inside the 2nd query
        "2023-09-01 06:18:54",
        [
            (25278, "27002788", 2, "ShareLock", "transaction 27002786",
             'SELECT DISTINCT ON (s0."hash") s0."hash" FROM (SELECT sb0."hash" AS "hash", '
             'sb0."consensus" AS "consensus" FROM "blocks" AS sb0 WHERE (sb0."is_empty" IS NULL) '
             'AND (sb0."consensus" = TRUE) ORDER BY sb0."hash" LIMIT $1 OFFSET 1000 FOR UPDATE) AS'
             ' s0 INNER JOIN "transactions" AS t1 ON s0."number" = t1."block_number" ORDER BY '
             's0."hash"'),
            (25333, "27002786", 1, "ShareLock", "transaction 27002788",
             'INSERT INTO "transactions" AS t0 ("block_hash","block_number",'
             '"cumulative_gas_used","da_fee","da_gas_pr'),
        ],
        False,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_published_report_field_by_field(name: str) -> None:
    at, procs, truncated = CASES[name]
    dl = read(name)
    assert dl.at == at
    assert dl.victim == 1 and dl.truncated is truncated, dl.unparsed
    assert [t.thread_id for t in dl.transactions] == [p[0] for p in procs]
    assert [t.trx_id for t in dl.transactions] == [p[1] for p in procs]
    assert [t.blocked_by for t in dl.transactions] == [p[2] for p in procs]
    assert [t.victim for t in dl.transactions] == [True] + [False] * (len(procs) - 1)
    assert [(lk.n, lk.mode, lk.special) for lk in dl.locks] == [
        (i + 1, p[3], p[4]) for i, p in enumerate(procs)
    ]
    assert [ws(t.query) or None for t in dl.transactions] == [p[5] for p in procs]
    record = deadlock_record(dl)
    assert [t.blocked_by for t in record.transactions] == [p[2] for p in procs]


def test_published_lock_types_and_tables() -> None:
    dex = read("superdurable-dex-51.log")
    assert dex.locks[0].lock_type == "TRANSACTION"
    assert dex.locks[0].table == "xdb_sys_process_executions"  # from the victim's CONTEXT
    temboard = read("dalibo-temboard-890.log")
    assert {lk.lock_type for lk in temboard.locks} == {"RELATION"}
