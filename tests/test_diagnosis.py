"""Deadlock diagnosis: queue shapes on real captures, generic shapes never called queue problems."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORPUS as SHARED_CORPUS
from conftest import need_corpus

from dbwatch.deadlocks.diagnosis import diagnose, query_kind
from dbwatch.parsers.errorlog import iter_deadlocks
from dbwatch.parsers.innodb_status import parse_status

FIX = Path(__file__).parent / "fixtures" / "innodb"
CORPUS = SHARED_CORPUS / "innodb-status"


def dl_of(path: Path):  # type: ignore[no-untyped-def]
    dl = parse_status(need_corpus(path).read_text(encoding="utf-8", errors="replace")).deadlock
    assert dl is not None
    return dl


@pytest.mark.parametrize("path,pattern,rules", [
    (CORPUS / "mariadb-10.11__laravel-queue-index__delete-vs-claim.txt",
     "queue-claim-vs-delete", ("QU401",)),
    (FIX / "mariadb-laravel-queue-index.txt", "queue-claim-vs-delete", ("QU401",)),
    (CORPUS / "mariadb-10.11__laravel-legacy-index__claim-vs-claim.txt",
     "queue-legacy-index", ("QU301",)),
    (FIX / "mariadb-laravel-legacy-index.txt", "queue-legacy-index", ("QU301",)),
    (FIX / "mariadb-opposite-order.txt", "opposite-order-rows", ()),
    (CORPUS / "external__mariadb-10.7.3__MDEV-29187-repro__innodb-status.txt",
     "opposite-order-rows", ()),
    (FIX / "mysql8-manual-example-status.txt", "opposite-order-rows", ()),
    (CORPUS / "innotop__t__innodb-status-004", "gap-insert-intention", ()),
    (CORPUS / "percona-toolkit__t__pt-fk-error-logger__samples__is001.txt", "lock-upgrade", ()),
    (CORPUS / "percona-toolkit__t__pt-deadlock-logger__samples__bug_1195034.txt", "too-deep", ()),
], ids=lambda v: getattr(v, "name", str(v))[:40])
def test_shapes(path: Path, pattern: str, rules: tuple[str, ...]) -> None:
    diag = diagnose(dl_of(path))
    assert diag.pattern == pattern and diag.rules == rules
    assert diag.is_queue_problem == pattern.startswith("queue-")
    assert set(diag.to_dict()) == {"pattern", "rules", "explanation", "fix"}
    if not diag.is_queue_problem:
        assert "queue" not in diag.explanation.lower() and "QU" not in diag.fix


def test_claim_vs_delete_words_when_the_delete_is_rolled_back() -> None:
    diag = diagnose(dl_of(CORPUS / "mariadb-10.11__laravel-queue-index__delete-vs-claim.txt"))
    assert "rolled back the delete" in diag.explanation
    assert "run again" in diag.explanation and "retry_after" in diag.explanation
    assert "`test.jobs`" in diag.explanation and "thread 96" in diag.explanation
    assert "SKIP LOCKED" in diag.fix and "retry" in diag.fix


def test_claim_vs_delete_words_when_the_claim_is_rolled_back() -> None:
    diag = diagnose(dl_of(FIX / "mariadb-laravel-queue-index.txt"))
    assert "rolled back the claim" in diag.explanation


def test_legacy_fix_names_the_index() -> None:
    diag = diagnose(dl_of(CORPUS / "mariadb-10.11__laravel-legacy-index__claim-vs-claim.txt"))
    # QU301's statement (queues/laravel.py), schema-qualified from the report: one online
    # ALTER, never a drop before the new index exists
    assert diag.fix.startswith(
        "ALTER TABLE `test`.`jobs` DROP INDEX `jobs_queue_reserved_at_index`, ADD INDEX "
        "`jobs_queue_index` (`queue`), ALGORITHM=INPLACE, LOCK=NONE; "
    )
    assert "Laravel 5.3–5.4" in diag.explanation


def test_error_log_deadlocks_diagnosed() -> None:
    with open(FIX / "mariadb-error-log-excerpt.log", encoding="utf-8") as fh:
        pats = {diagnose(d).pattern for d in iter_deadlocks(fh)}
    assert pats == {"queue-legacy-index"}


def test_renamed_jobs_table_with_prefix_and_fetch_side() -> None:
    text = need_corpus(CORPUS / "mariadb-10.11__laravel-queue-index__delete-vs-claim.txt").read_text()
    text = text.replace("`jobs`", "`acme_jobs`").replace(
        "DELETE FROM `acme_jobs` WHERE `id` = 35",
        "select * from `acme_jobs` where `id` = ? limit 1 for update")
    diag = diagnose(parse_status(text).deadlock)  # type: ignore[arg-type]
    assert diag.pattern == "queue-claim-vs-delete" and diag.rules == ("QU401",)


def test_same_shape_on_a_non_queue_table_is_not_a_queue_problem() -> None:
    text = need_corpus(CORPUS / "mariadb-10.11__laravel-queue-index__delete-vs-claim.txt").read_text()
    text = text.replace("`jobs`", "`orders`").replace("jobs_queue_index", "orders_state_index")
    text = text.replace("`reserved_at`", "`shipped_at`").replace("`available_at`", "`paid_at`")
    diag = diagnose(parse_status(text).deadlock)  # type: ignore[arg-type]
    assert not diag.is_queue_problem and diag.rules == ()


@pytest.mark.parametrize("query,kind", [
    ("delete from `jobs` where `id` = ?", "delete"),
    ("DELETE FROM jobs WHERE id = 35", "delete"),
    ("select * from `jobs` where `id` = ? limit 1 for update", "fetch"),
    (("select * from `jobs` where `queue` = ? and ((`reserved_at` is null and "
      "`available_at` <= ?) or (`reserved_at` <= ?)) order by `id` asc limit 1 for update"),
     "claim"),
    ("update `jobs` set `reserved_at` = ?, `attempts` = ? where `id` = ?", "reserve"),
    ("delete from `orders` where `id` = ?", "other"),
    ("select * from jobs where id = 1", "fetch"),  # in a deadlock: locking (text may be cut)
    ("delete from laravel.jobs", "delete"),  # cut by the server, qualified
    ("update jobs set state = ? where id = ?", "complete"),
    (None, "other"),
])
def test_query_kind(query: str | None, kind: str) -> None:
    assert query_kind(query, {"jobs"}) == kind
