"""QU401/QU402 detectors over transactions and digest rows, with negative controls."""
from __future__ import annotations

import pytest

from dbwatch.findings import Finding
from dbwatch.sqlpatterns.detect import (
    ServerVersion,
    detect_digests,
    detect_transactions,
    parse_server_version,
)
from dbwatch.sqlpatterns.transactions import group_transactions

CLAIM = ("select * from `jobs` where `queue` = 'default' and ((`reserved_at` is null and "
         "`available_at` <= 1700000000) or (`reserved_at` <= 1699999910)) order by `id` asc "
         "limit 1 for update")
MARIADB = parse_server_version("10.11.6-MariaDB-0+deb12u1")


def _run(stmts: list[str], server: ServerVersion | None = MARIADB,
         dialect: str = "mysql") -> list[Finding]:
    ev = [(1, None, "SET AUTOCOMMIT = 0")] + [(1, None, s) for s in stmts]
    return detect_transactions(group_transactions(ev, dialect), server, "t1", dialect)


def _laravel(job: int, delete: list[str] | None = None) -> list[str]:
    delete = delete if delete is not None else [
        f"select * from `jobs` where `id` = {job} limit 1 for update",
        f"delete from `jobs` where `id` = {job}"]
    return [CLAIM, f"update `jobs` set `reserved_at` = 1, `attempts` = 1 where `id` = {job}",
            "COMMIT", *delete, "COMMIT"]


def test_qu401_laravel_fetch_before_delete() -> None:
    found = _run(_laravel(1) + _laravel(2) + _laravel(3))
    (f,) = [f for f in found if f.rule == "QU401"]
    assert f.subject == "table jobs" and f.severity == "warning" and f.confidence == "high"
    assert f.evidence["count"] == 3 and f.evidence["transactions"] == 3
    assert f.evidence["key_columns"] == ["id"]
    assert f.evidence["example"] == {"select": "select * from `jobs` where `id` = 1 limit 1 for update",
                                     "delete": "delete from `jobs` where `id` = 1"}
    assert "DELETE FROM jobs WHERE id = ?" in f.fix and "deleteReserved" in f.fix
    assert "3 times in 3 transactions" in f.summary


@pytest.mark.parametrize("delete", [
    ["delete from `jobs` where `id` = 1"],                                     # single delete
    ["select * from `jobs` where `id` = 1 limit 1 for update",
     "delete from `jobs` where `id` = 2"],                                     # another row
    ["select * from `jobs` where `id` = 1 limit 1 for update",
     "update `jobs` set attempts = 2 where id = 1", "delete from `jobs` where `id` = 1"],
    ["select * from `jobs` where `id` = 1 limit 1",                            # no lock
     "delete from `jobs` where `id` = 1"],
    ["select * from `jobs` where `id` = 1 limit 1 for update",
     "delete from `failed_jobs` where `id` = 1"],                              # another table
    ["select * from `jobs` where `id` = 1 limit 1 for update", "COMMIT",
     "delete from `jobs` where `id` = 1"],                                     # two transactions
])
def test_qu401_negative_controls(delete: list[str]) -> None:
    assert [f for f in _run(_laravel(1, delete)) if f.rule == "QU401"] == []


def test_qu401_prepared_and_lock_in_share_mode() -> None:
    stmts = ["select * from jobs where id = ? lock in share mode", "SAVEPOINT a",
             "delete from jobs where id = ?", "COMMIT"]
    (f,) = _run(stmts)
    assert f.rule == "QU401" and f.evidence["count"] == 1


def test_qu401_postgresql_parameters_compared() -> None:
    ev = [("p1", None, "BEGIN"), ("p1", None, "select * from jobs where id = $1 for update"),
          ("p1", None, "delete from jobs where id = $1"), ("p1", None, "COMMIT")]
    txns = list(group_transactions(ev, "postgresql"))
    txns[0].statements[0].params = {"$1": "'5'"}
    txns[0].statements[1].params = {"$1": "'6'"}
    assert detect_transactions(txns, None, "t", "postgresql") == []
    txns[0].statements[1].params = {"$1": "'5'"}
    (f,) = detect_transactions(txns, None, "t", "postgresql")
    assert f.rule == "QU401"


def test_qu402_claim_without_skip_locked() -> None:
    (f,) = [f for f in _run(_laravel(1, []) * 4) if f.rule == "QU402"]
    assert f.evidence["count"] == 4 and f.confidence == "high"
    assert "SKIP LOCKED" in f.fix and "6.14" in f.fix and "8.69" in f.fix
    assert f.evidence["fingerprint"].endswith("order by id asc limit ? for update")


@pytest.mark.parametrize("version, expect", [
    ("10.5.22-MariaDB", None), ("10.6.0-MariaDB", "high"), ("5.7.44", None),
    ("8.0.0", None), ("8.0.1", "high"), ("mysql 8.4.0", "high"), ("postgresql 9.4", None),
    ("postgresql 9.5", "high"), (None, "probable"),
])
def test_qu402_depends_on_server_version(version: str | None, expect: str | None) -> None:
    server = parse_server_version(version, "mysql") if version else None
    if version and "postgres" not in version:
        assert server is not None
    found = [f.confidence for f in _run(_laravel(1, []), server) if f.rule == "QU402"]
    assert found == ([expect] if expect else [])


def test_qu402_unknown_version_says_so() -> None:
    (f,) = [f for f in _run(_laravel(1, []), None) if f.rule == "QU402"]
    assert "server version unknown" in f.summary and f.evidence["server_version"] is None


@pytest.mark.parametrize("sql", [
    CLAIM + " skip locked",
    CLAIM + " nowait",
    "select * from users where name = 'a' order by id limit 1 for update",   # not a queue
    "select * from jobs where queue = 'default' order by id limit 1",        # no lock
    "select * from jobs where queue = 'default' for update",                 # no order/limit
])
def test_qu402_negative_controls(sql: str) -> None:
    assert [f for f in _run([sql, "COMMIT"]) if f.rule == "QU402"] == []


@pytest.mark.parametrize("table", ["que_jobs", "good_jobs", "oban_jobs", "river_job",
                                   "solid_queue_ready_executions", "delayed_jobs"])
def test_qu402_queue_table_names(table: str) -> None:
    sql = f"select id from {table} order by priority limit 5 for update"
    (f,) = _run([sql, "COMMIT"], parse_server_version("postgresql 15"), "postgresql")
    assert f.subject == f"table {table}"


def test_parse_server_version() -> None:
    v = parse_server_version("10.11.19-MariaDB-0+deb12u1 (Debian 12)")
    assert v == ServerVersion("mariadb", (10, 11, 19), "10.11.19-MariaDB-0+deb12u1 (Debian 12)")
    assert parse_server_version("8.0.36 (MySQL Community Server - GPL)", "mysql").engine == "mysql"
    assert parse_server_version("11.4", "mysql").engine == "mariadb"
    assert parse_server_version("PostgreSQL 15.20").version == (15, 20)
    assert parse_server_version("15", "postgresql").version == (15,)
    assert parse_server_version("banana") is None


DIGESTS_MYSQL = [
    ("SELECT * FROM `jobs` WHERE `id` = ? LIMIT ? FOR UPDATE", 1000),
    ("DELETE FROM `jobs` WHERE `id` = ?", 990),
    ("UPDATE `jobs` SET `reserved_at` = ? , `attempts` = ? WHERE `id` = ?", 1010),
]


def test_digests_probable_qu401() -> None:
    (f,) = detect_digests(DIGESTS_MYSQL, "db1")
    assert f.rule == "QU401" and f.confidence == "probable" and f.subject == "table jobs"
    assert f.evidence["select_calls"] == 1000 and f.evidence["delete_calls"] == 990
    pg = [("select * from jobs where id = $1 limit $2 for update", 500),
          ("delete from jobs where id = $1", 510)]
    (g,) = detect_digests(pg, "db2", dialect="postgresql")
    assert g.evidence["source"] == "digest"


@pytest.mark.parametrize("rows", [
    [DIGESTS_MYSQL[0], ("DELETE FROM `jobs` WHERE `id` = ?", 100)],        # not equal
    [("SELECT * FROM `jobs` WHERE `id` = ?", 1000), DIGESTS_MYSQL[1]],     # no lock
    [DIGESTS_MYSQL[0], ("DELETE FROM `failed_jobs` WHERE `id` = ?", 990)],  # other table
    [("SELECT * FROM `jobs` WHERE `id` = ? FOR UPDATE", 3),
     ("DELETE FROM `jobs` WHERE `id` = ?", 3)],                            # too few calls
])
def test_digests_negative_controls(rows: list[tuple[str, int]]) -> None:
    assert detect_digests(rows, "db") == []


def test_reported_table_keeps_the_statements_case() -> None:
    """Shapes compare names case-insensitively; the report spells the table as the SQL did,
    and the fingerprint does not depend on the spelling."""
    from dbwatch.sqlpatterns.detect import shown_name
    assert shown_name("jobs_casex", ["DELETE FROM `Jobs_CaseX` WHERE id = 5"]) == "Jobs_CaseX"
    assert shown_name("app.jobs", ['select * from "App"."Jobs" where id = 1']) == "App.Jobs"
    assert shown_name("jobs", ["select * from jobs_archive where id = 1"]) == "jobs"
