"""The per-connection transaction grouper: explicit, autocommit off, autocommit, bounds."""
from __future__ import annotations

from dbwatch.sqlpatterns.transactions import Transaction, TransactionGrouper, group_transactions


def _texts(txns: list[Transaction]) -> list[tuple[object, list[str], str]]:
    return [(t.connection, [s.text for s in t.statements], t.end) for t in txns]


def test_explicit_transactions_interleaved_connections() -> None:
    ev = [(1, None, "BEGIN"), (2, None, "START TRANSACTION"), (1, None, "select 1"),
          (2, None, "select 2"), (1, None, "delete from jobs where id = 1"),
          (2, None, "ROLLBACK"), (1, None, "COMMIT")]
    assert _texts(list(group_transactions(ev))) == [
        (2, ["select 2"], "rollback"),
        (1, ["select 1", "delete from jobs where id = 1"], "commit")]


def test_autocommit_off_implicit_transactions_between_commits() -> None:
    ev = [(7, None, "SET AUTOCOMMIT = 0"), (7, None, "select a"), (7, None, "update b"),
          (7, None, "COMMIT"), (7, None, "select c"), (7, None, "delete d"),
          (7, None, "COMMIT"), (7, None, "set autocommit=1"), (7, None, "select e")]
    assert _texts(list(group_transactions(ev))) == [
        (7, ["select a", "update b"], "commit"), (7, ["select c", "delete d"], "commit"),
        (7, ["select e"], "autocommit")]


def test_new_session_is_autocommit() -> None:
    done: list[Transaction] = []
    g = TransactionGrouper(done.append)
    g.connect(3)
    for text in ("select a", "delete b"):
        g.feed(3, None, text)
    g.disconnect(3)
    assert _texts(done) == [(3, ["select a"], "autocommit"), (3, ["delete b"], "autocommit")]


def test_session_older_than_log_infers_autocommit_off_from_commit() -> None:
    """No Connect and no SET seen (log rotated, or a slow log): a bare COMMIT shows it."""
    ev = [(5, None, "select a for update"), (5, None, "delete a"), (5, None, "COMMIT"),
          (5, None, "select b for update"), (5, None, "delete b"), (5, None, "COMMIT")]
    assert _texts(list(group_transactions(ev))) == [
        (5, ["select a for update", "delete a"], "commit"),
        (5, ["select b for update", "delete b"], "commit")]


def test_unknown_session_without_commit_is_autocommit() -> None:
    ev = [(5, None, "select a"), (5, None, "delete a"), (5, None, "BEGIN"),
          (5, None, "insert x"), (5, None, "COMMIT"), (5, None, "select z")]
    assert _texts(list(group_transactions(ev))) == [
        (5, ["select a"], "autocommit"), (5, ["delete a"], "autocommit"),
        (5, ["insert x"], "commit"), (5, ["select z"], "autocommit")]


def test_savepoints_and_set_do_not_end_transactions() -> None:
    ev = [(1, None, "BEGIN"), (1, None, "SAVEPOINT trans2"), (1, None, "select a"),
          (1, None, "ROLLBACK TO SAVEPOINT trans2"), (1, None, "delete a"), (1, None, "COMMIT")]
    (t,) = list(group_transactions(ev))
    assert [s.kind for s in t.statements] == ["select", "savepoint", "delete"]
    assert t.explicit and t.end == "commit"


def test_mysql_ddl_commits_implicitly() -> None:
    ev = [(1, None, "BEGIN"), (1, None, "insert a"), (1, None, "create table t (a int)"),
          (1, None, "insert b")]
    assert _texts(list(group_transactions(ev))) == [(1, ["insert a"], "implicit"),
                                                    (1, ["insert b"], "autocommit")]
    assert _texts(list(group_transactions(ev, dialect="postgresql"))) == [
        (1, ["insert a", "create table t (a int)", "insert b"], "eof")]


def test_caps_statements_and_connections() -> None:
    done: list[Transaction] = []
    g = TransactionGrouper(done.append, max_statements=10, max_connections=3)
    g.feed(1, None, "BEGIN")
    for i in range(25):
        g.feed(1, None, f"select {i}")
    assert [len(t.statements) for t in done] == [10, 10] and g.stats.split == 2
    for conn in range(2, 7):
        g.feed(conn, None, "BEGIN")
        g.feed(conn, None, "select x")
    assert g.open_connections() == 3 and g.stats.evicted == 3
    assert done[2].connection == 1 and done[2].end == "evicted"


def test_buffered_text_is_bounded() -> None:
    done: list[Transaction] = []
    g = TransactionGrouper(done.append, max_buffered_chars=100_000)
    for conn in range(50):
        g.feed(conn, None, "BEGIN")
        g.feed(conn, None, "insert into t values ('" + "x" * 50_000 + "')")
    assert g.open_connections() <= 100_000 // (16 * 1024) + 1    # 16 KiB held per statement
    assert all(len(s.text) <= 16 * 1024 for t in done for s in t.statements)
