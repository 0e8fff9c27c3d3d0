"""Fingerprints and the cheap classifier: normalisation, key extraction, hostile text."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbwatch.sqlpatterns.fingerprint import (
    MAX_STATEMENT,
    Classifier,
    fingerprint,
    prenormalise,
    quick_kind,
)


@pytest.mark.parametrize("a, b", [
    ("SELECT * FROM `jobs` WHERE `id` = 42 LIMIT 1 FOR UPDATE",
     "select *\n  from jobs /* hint */ where id=7 limit 1 for update -- trailing"),
    ("DELETE FROM \"public\".\"jobs\" WHERE id = $1", "delete from public.jobs where ID = 'x'"),
    ("select 1 from t where a in (1, 2, 3)", "SELECT 5 FROM T WHERE A IN (4)"),
    ("select * from t where s = 'it''s -- no comment'", "select * from t where s = ?"),
])
def test_same_fingerprint(a: str, b: str) -> None:
    dialect = "postgresql" if "$1" in a or '"' in a else "mysql"
    assert fingerprint(a, dialect) == fingerprint(b, dialect) != ""


def test_fingerprint_text() -> None:
    assert fingerprint("DELETE FROM `test`.`jobs` WHERE `id` = 42") == \
        "delete from test.jobs where id = ?"


def test_prenormalise_values_in_order() -> None:
    shape, values = prenormalise(
        "select * from jobs where queue = 'default' and id in (1,2) and b = 3.5 and c = ?")
    assert shape == "select * from jobs where queue = ? and id in (?) and b = ? and c = ?"
    assert values == ("'default'", ("1", "2"), "3.5", "?")


def test_identifiers_with_digits_are_not_literals() -> None:
    shape, values = prenormalise("select t1.c2 from t1 where t1.id = 10")
    assert shape == "select t1.c2 from t1 where t1.id = ?" and values == ("10",)


def test_classify_laravel_claim_and_delete() -> None:
    c = Classifier()
    claim, _ = c.classify(
        "select * from `jobs` where `queue` = 'default' and ((`reserved_at` is null and "
        "`available_at` <= 1700000000) or (`reserved_at` <= 1699999910)) order by `id` asc "
        "limit 1 for update") or (None, None)
    assert claim is not None
    assert (claim.kind, claim.table, claim.lock, claim.order_by, claim.limit) == \
        ("select", "jobs", "update", True, True)
    assert claim.key_eq is None and not claim.skip_locked
    assert {"queue", "reserved_at", "available_at"} <= claim.where_cols
    sel = c.classify("select * from jobs where id = 9 limit 1 for update")
    assert sel is not None and sel[0].key_eq == (("id", 0),) and sel[1][0] == "9"
    upd = c.classify("update jobs set reserved_at = 5, attempts = 1 where id = 9")
    assert upd is not None and upd[0].key_eq == (("id", 2),) and upd[1][2] == "9"


@pytest.mark.parametrize("sql, lock, skip, nowait", [
    ("select * from jobs where id = 1 lock in share mode", "share", False, False),
    ("select * from jobs where id = 1 for share", "share", False, False),
    ("select * from jobs order by id limit 1 for update skip locked", "update", True, False),
    ("select * from jobs order by id limit 1 for no key update nowait", "update", False, True),
    ("select * from jobs where id = 1", None, False, False),
])
def test_lock_clauses(sql: str, lock: str | None, skip: bool, nowait: bool) -> None:
    r = Classifier("postgresql").classify(sql)
    assert r is not None
    assert (r[0].lock, r[0].skip_locked, r[0].nowait) == (lock, skip, nowait)


def test_where_with_or_is_not_a_key_lookup() -> None:
    r = Classifier().classify("delete from jobs where id = 1 or id = 2")
    assert r is not None and r[0].key_eq is None


@pytest.mark.parametrize("sql, kind", [
    ("START TRANSACTION", "begin"), ("begin", "begin"), ("BEGIN ISOLATION LEVEL SERIALIZABLE",
                                                         "begin"),
    ("COMMIT", "commit"), ("end", "commit"), ("rollback", "rollback"),
    ("ROLLBACK TO SAVEPOINT trans2", "savepoint"), ("SAVEPOINT trans2", "savepoint"),
    ("SET AUTOCOMMIT = 0", "autocommit_off"), ("set autocommit=1", "autocommit_on"),
    ("SET @@session.autocommit = OFF", "autocommit_off"), ("set names utf8mb4", "set"),
    ("/* app */ DELETE FROM jobs WHERE id = 1", "delete"), ("   ", "empty"),
    ("PREPARE TRANSACTION 'x'", "commit"), ("create table t (a int)", "ddl"),
])
def test_quick_kind(sql: str, kind: str) -> None:
    assert quick_kind(sql) == kind


def test_cache_parses_each_shape_once() -> None:
    c = Classifier()
    for i in range(1000):
        assert c.classify(f"delete from jobs where id = {i}") is not None
    assert c.stats.parsed == 1 and c.stats.classified == 1000


def test_oversized_and_deep_statements_are_counted_not_raised() -> None:
    c = Classifier()
    huge = "select * from jobs where id = 1 and payload = '" + "x" * (MAX_STATEMENT * 4) + "'"
    assert c.classify(huge) is not None          # the literal is cut; the shape still parses
    assert c.stats.truncated == 1
    deep = "select " + "(" * 5000 + "1" + ")" * 5000
    assert c.classify(deep) is None              # sqlparse's grouping limit, counted
    assert c.stats.unparsable == 1


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_never_raises_on_garbage(text: str) -> None:
    for dialect in ("mysql", "postgresql"):
        c = Classifier(dialect)
        c.classify(text)
        quick_kind(text)
        fingerprint(text, dialect)
        assert c.stats.classified == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["select", "from", "jobs", "where", "id", "=", "?", "'a",
                                 "(", ")", "for", "update", "--", "/*", "*/", "`", '"', ";",
                                 "1", "$1", "in", ",", "\\", "\n", "order by", "limit"]),
                max_size=40))
def test_never_raises_on_sql_like_garbage(words: list[str]) -> None:
    Classifier().classify(" ".join(words))
    Classifier("postgresql").classify("".join(words))
