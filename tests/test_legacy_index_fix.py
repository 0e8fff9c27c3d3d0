"""The legacy-index fix has one home (issue 25.4): queues/laravel.py's LEGACY_SHAPES and
legacy_index_fix. QU301 (from the catalog's columns) and the deadlock diagnosis (from the index
name an InnoDB report prints) give the same SQL and the same Laravel release for one index."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbwatch.catalogue import load_catalogue
from dbwatch.config import Config
from dbwatch.deadlocks.diagnosis import diagnose
from dbwatch.evaluate import Selection, evaluate
from dbwatch.parsers.errorlog import iter_deadlocks
from dbwatch.parsers.innodb_status import parse_status
from dbwatch.queues.laravel import LEGACY_SHAPES, legacy_index_fix, legacy_shape_of_name
from dbwatch.records import Diagnosis
from dbwatch.snapshot import Snapshot

CAPTURE = Path(__file__).parent / "fixtures" / "innodb" / "mariadb-laravel-legacy-index.txt"
CAPTURED_TABLE = "dbw_dl_b34f23d2_jobs"
CLAIM = (
    "select * from `{t}` where `queue` = ? and ((`reserved_at` is null and `available_at` <= ?)"
    " or (`reserved_at` <= ?)) order by `id` asc limit 1 for update"
)
RESERVE = "update `{t}` set `reserved_at` = ?, `attempts` = ? where `id` = ?"
DELETE = "delete from `{t}` where `id` = ?"


def captured(schema: str, table: str, index: str | None = None) -> Diagnosis:
    """The captured MariaDB legacy-index deadlock (claim vs reserve), renamed."""
    text = CAPTURE.read_text().replace(f"`test`.`{CAPTURED_TABLE}`", f"`{schema}`.`{table}`")
    if index is not None:
        text = text.replace(f"{CAPTURED_TABLE}_queue_reserved_at_index", index)
    dl = parse_status(text.replace(CAPTURED_TABLE, table)).deadlock
    assert dl is not None
    return diagnose(dl)


def error_log(q1: str, q2: str, index: str, table: str) -> Diagnosis:
    """A MySQL 5.7 error-log deadlock: (1) waits on `index`, (2) holds it and waits on PRIMARY."""
    note = "2019-06-12T08:15:42.3Z 9 [Note] InnoDB: "
    lock = "RECORD LOCKS space id 4 page no {p} n bits 96 index {ix} of table {t} trx id {x} "

    def trx(n: int, q: str, waits: str, holds: str | None) -> str:
        return (
            f"{note}*** ({n}) TRANSACTION:\nTRANSACTION 50{n}, ACTIVE 0 sec starting index read\n"
            "mysql tables in use 1, locked 1\nLOCK WAIT 2 lock struct(s), heap size 1136, 1 row "
            f"lock(s)\nMySQL thread id 4{n}, OS thread handle 1, query id 5 10.0.0.1 app "
            f"updating\n{q}\n"
            + (
                f"{note}*** ({n}) HOLDS THE LOCK(S):\n"
                + lock.format(p=9, ix=holds, t=table, x=f"50{n}")
                + "lock_mode X locks rec but not gap\n"
                if holds
                else ""
            )
            + f"{note}*** ({n}) WAITING FOR THIS LOCK TO BE GRANTED:\n"
            + lock.format(p=3 + n, ix=waits, t=table, x=f"50{n}")
            + "lock_mode X locks rec but not gap waiting\n"
        )

    text = (
        f"{note}Transactions deadlock detected, dumping detailed information.\n"
        + trx(1, q1, index, None)
        + trx(2, q2, "PRIMARY", index)
        + f"{note}*** WE ROLL BACK TRANSACTION (1)\n"
    )
    (dl,) = list(iter_deadlocks(text.splitlines()))
    return diagnose(dl)


def qu301_fix(engine: str, schema: str, rows: list[tuple[str, tuple[str, ...]]]) -> list[str]:
    """QU301's fixes for one jobs table's indexes (name, columns), as an audit prints them."""
    section = "pg.queue_indexes" if engine == "postgresql" else "my.queue_indexes"
    snap = Snapshot(
        target="t",
        engine=engine,
        server_version="10.11.6-MariaDB" if engine == "mysql" else "15.4",
        version_num=101106 if engine == "mysql" else 150004,
        taken_at=1_800_000_000.0,
        sections={
            section: [
                {"schema": schema, "table_name": "jobs", "index_name": n, "columns": list(c)}
                for n, c in rows
            ]
        },
    )
    result = evaluate(snap, load_catalogue(), Config(), Selection(select=("QU301",)))
    assert result.ran == ["QU301"], result.unknown
    return [f.fix for f in result.findings if f.rule == "QU301"]


# -- the one builder: QU301's text as it was before the move, both engines --------------------


@pytest.mark.parametrize(
    ("engine", "has_queue_index", "sql"),
    [
        (
            "mysql",
            False,
            "ALTER TABLE `shop`.`jobs` DROP INDEX `jobs_queue_reserved_at_index`, ADD INDEX "
            "`jobs_queue_index` (`queue`), ALGORITHM=INPLACE, LOCK=NONE;",
        ),
        (
            "mysql",
            True,
            "ALTER TABLE `shop`.`jobs` DROP INDEX `jobs_queue_reserved_at_index`, "
            "ALGORITHM=INPLACE, LOCK=NONE;",
        ),
        (
            "postgresql",
            False,
            'CREATE INDEX CONCURRENTLY "jobs_queue_index" ON "shop"."jobs" (queue); '
            'DROP INDEX CONCURRENTLY "shop"."jobs_queue_reserved_at_index";',
        ),
        (
            "postgresql",
            True,
            'DROP INDEX CONCURRENTLY "shop"."jobs_queue_reserved_at_index";',
        ),
    ],
)
def test_qu301_prints_the_builders_sql(engine: str, has_queue_index: bool, sql: str) -> None:
    cols = ("queue", "reserved_at")
    rows = [("jobs_queue_reserved_at_index", cols)]
    if has_queue_index:
        rows.append(("jobs_queue_index", ("queue",)))
    assert qu301_fix(engine, "shop", rows) == [sql]
    got = legacy_index_fix(engine, "shop", "jobs", ["jobs_queue_reserved_at_index"], has_queue_index)
    assert got == sql


def test_several_legacy_indexes_one_statement_new_index_first() -> None:
    ixs = ["jobs_queue_reserved_reserved_at_index", "jobs_queue_reserved_at_index"]
    assert legacy_index_fix("mysql", None, "jobs", ixs, False) == (
        "ALTER TABLE `jobs` DROP INDEX `jobs_queue_reserved_reserved_at_index`, DROP INDEX "
        "`jobs_queue_reserved_at_index`, ADD INDEX `jobs_queue_index` (`queue`), "
        "ALGORITHM=INPLACE, LOCK=NONE;"
    )
    pg = legacy_index_fix("postgresql", "public", "jobs", ixs, False)
    assert pg.startswith('CREATE INDEX CONCURRENTLY "jobs_queue_index"')
    assert pg.count("DROP INDEX CONCURRENTLY") == 2  # one index per DROP … CONCURRENTLY


def test_hostile_names_are_quoted() -> None:
    sql = legacy_index_fix("mysql", "a`b", "jobs", ["x`; DROP TABLE t; --"], False)
    assert sql.startswith("ALTER TABLE `a``b`.`jobs` DROP INDEX `x``; DROP TABLE t; --`,")


# -- the release by the index's name ----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        ("jobs_queue_reserved_reserved_at_index", ("queue", "reserved", "reserved_at")),
        ("jobs_queue_reserved_at_index", ("queue", "reserved_at")),
        ("jobs_queue_reserved_at_available_at_index", ("queue", "reserved_at", "available_at")),
        ("ACME_Jobs_Queue_Reserved_At_Index", ("queue", "reserved_at")),  # prefix, any case
        ("queue_reserved_at_index", ("queue", "reserved_at")),
        ("jobs_queue_index", None),
        ("jobs_reserved_at_index", None),
        ("idx_queue_reserved", None),
        ("jobs_queue_reserved_at_idx", None),
    ],
)
def test_legacy_shape_of_name(name: str, shape: tuple[str, ...] | None) -> None:
    assert legacy_shape_of_name(name) == shape


def test_every_release_has_a_name() -> None:
    """Laravel names an index `<table>_<columns>_index`: each shape is found by its name."""
    for shape in LEGACY_SHAPES:
        assert legacy_shape_of_name("jobs_" + "_".join(shape) + "_index") == shape


# -- the diagnosis prints QU301's statement and release ---------------------------------------


def test_the_diagnosis_prints_what_qu301_prints() -> None:
    diag = captured("shop", "jobs", "jobs_queue_reserved_at_index")
    assert diag.pattern == "queue-legacy-index" and diag.rules == ("QU301",)
    (qu301,) = qu301_fix("mysql", "shop", [("jobs_queue_reserved_at_index", ("queue", "reserved_at"))])
    assert diag.fix.startswith(qu301 + " ")
    assert "CREATE INDEX" not in diag.fix and " ON `" not in diag.fix  # no drop-then-create
    assert "leave out the ADD INDEX" in diag.fix  # it cannot see a (queue) index
    assert "Laravel 5.3–5.4" in diag.explanation and "(queue, reserved_at)" in diag.explanation


def test_claim_vs_delete_on_a_legacy_index_appends_the_same_statement() -> None:
    diag = error_log(DELETE.format(t="jobs"), CLAIM.format(t="jobs"),
                     "jobs_queue_reserved_at_index", "`app`.`jobs`")
    assert (diag.pattern, diag.rules) == ("queue-claim-vs-delete", ("QU401", "QU301"))
    (qu301,) = qu301_fix("mysql", "app", [("jobs_queue_reserved_at_index", ("queue", "reserved_at"))])
    assert f" {qu301} " in diag.fix


@pytest.mark.parametrize(
    ("index", "release", "columns"),
    [
        ("jobs_queue_reserved_reserved_at_index", "Laravel 5.1–5.2", "(queue, reserved, reserved_at)"),
        ("jobs_queue_reserved_at_index", "Laravel 5.3–5.4", "(queue, reserved_at)"),
        ("jobs_queue_reserved_at_available_at_index", "Laravel 12.54", "(queue, reserved_at, available_at)"),
    ],
)
def test_the_release_is_the_one_qu301_names(index: str, release: str, columns: str) -> None:
    diag = error_log(RESERVE.format(t="jobs"), CLAIM.format(t="jobs"), index, "`app`.`jobs`")
    assert diag.pattern == "queue-legacy-index"
    assert f"the name {release} gives its {columns} index" in diag.explanation
    others = {r for r in LEGACY_SHAPES.values() if r != release}
    assert not any(r in diag.explanation for r in others)
    assert diag.fix.startswith(f"ALTER TABLE `app`.`jobs` DROP INDEX `{index}`, ADD INDEX")


def test_a_name_laravel_never_gave_gets_no_release() -> None:
    diag = error_log(RESERVE.format(t="jobs"), CLAIM.format(t="jobs"), "idx_queue_reserved",
                     "`app`.`jobs`")
    assert diag.pattern == "queue-legacy-index"
    assert "Laravel 5" not in diag.explanation and "12.54" not in diag.explanation
    assert "the report lists no columns" in diag.explanation


def test_the_schema_is_left_out_only_when_the_report_has_none() -> None:
    diag = error_log(RESERVE.format(t="jobs"), CLAIM.format(t="jobs"),
                     "jobs_queue_reserved_at_index", "`jobs`")
    assert diag.pattern == "queue-legacy-index"
    assert diag.fix.startswith("ALTER TABLE `jobs` DROP INDEX `jobs_queue_reserved_at_index`,")
