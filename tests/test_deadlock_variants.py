"""Deadlock reports as the world writes them: every version's prefixes, pastes, lost headers.

Each fixture in tests/fixtures/innodb/variants is one spelling; each transformation below is
one way a paste mangles text. The answer must be the same deadlock every time.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from dbwatch.deadlocks.diagnosis import diagnose
from dbwatch.parsers.errorlog import Scanner, iter_deadlocks
from dbwatch.parsers.innodb_status import parse_status

FIX = Path(__file__).parent / "fixtures" / "innodb"
VAR = FIX / "variants"


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def found(text: str) -> list:  # type: ignore[type-arg]
    return list(iter_deadlocks(text.splitlines(keepends=True)))


def shape(dl) -> tuple:  # type: ignore[no-untyped-def,type-arg]
    return (dl.victim, tuple(t.trx_id for t in dl.transactions),
            tuple(t.thread_id for t in dl.transactions),
            tuple((lk.n, lk.waiting, lk.table, lk.index) for lk in dl.locks))


# fixture -> (number of deadlocks, victim of the first, trx ids of the first)
SPELLINGS = {
    "mysql57-laravel-jobs-cut-delete.log": (1, 1, ("41722335", "41722336")),
    "mysql84-error-log-spacing.log": (1, 2, ("2107", "2108")),
    "mysql51-error-log.log": (1, 1, (str((0 << 32) + 3793488), "3793487")),
    "mysql56-error-log.log": (1, 1, ("3793488", "3793487")),
    "mariadb-journald.log": (4, 1, ("107448", "107462")),
    "forum-bare-blocks.md": (2, 1, ("3793488", "3793487")),
}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_each_spelling(name: str) -> None:
    n, victim, ids = SPELLINGS[name]
    dls = found(read(VAR / name))
    assert len(dls) == n
    first = dls[0]
    assert first.victim == victim and not first.truncated and not first.ambiguous
    assert tuple(t.trx_id for t in first.transactions) == ids
    assert all(t.thread_id for t in first.transactions)
    assert any(lk.waiting for lk in first.locks)


def test_mysql51_details() -> None:
    (dl,) = found(read(VAR / "mysql51-error-log.log"))
    assert dl.at == "2013-09-04 14:41:28"
    assert [(lk.db, lk.table, lk.index) for lk in dl.locks][0] == ("test", "t", "PRIMARY")


# --- transformations: the same deadlock through every kind of paste ------------------------

def crlf(t: str) -> str:
    return t.replace("\n", "\r\n")


def trailing(t: str) -> str:
    return "\n".join(ln + "  \t" for ln in t.split("\n"))


def email_quote(t: str) -> str:
    return "\n".join("> " + ln for ln in t.split("\n"))


def double_quote(t: str) -> str:
    return "\n".join(">> " + ln if ln else ">" for ln in t.split("\n"))


def indent(t: str) -> str:
    return "\n".join("    " + ln for ln in t.split("\n"))


def runs(t: str) -> str:
    return (t.replace(" of table ", " of   table ").replace("lock_mode X", "lock_mode  X")
            .replace("TRANSACTION:", "TRANSACTION: ").replace("trx id ", "trx id\t"))


def lost_first_prefix(t: str) -> str:
    lines = t.split("\n")
    for i, ln in enumerate(lines):
        if "deadlock detected" in ln:
            cut = min((ln.index(k) for k in ("[Note]", "InnoDB:") if k in ln), default=0)
            lines[i] = ln[cut:]
            break
    return "\n".join(lines)


def from_first_block(t: str) -> str:
    """A paste that starts at the first `*** (1) TRANSACTION:` (header lost)."""
    return t[t.index("*** (1) TRANSACTION:"):]


TRANSFORMS = [crlf, trailing, email_quote, double_quote, indent, runs, lost_first_prefix]
LOGS = ["mysql57-laravel-jobs-cut-delete.log", "mysql84-error-log-spacing.log",
        "mysql51-error-log.log", "mysql56-error-log.log"]


@pytest.mark.parametrize("fn", TRANSFORMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", LOGS)
def test_pasted_error_logs_read_the_same(name: str, fn) -> None:  # type: ignore[no-untyped-def]
    text = read(VAR / name)
    (want,) = found(text)
    got = found(fn(text))
    assert len(got) == 1 and shape(got[0]) == shape(want) and not got[0].ambiguous


@pytest.mark.parametrize("fn", [crlf, email_quote, indent, trailing])
def test_pasted_mariadb_excerpt(fn) -> None:  # type: ignore[no-untyped-def]
    text = read(FIX / "mariadb-error-log-excerpt.log")
    want = [shape(d) for d in found(text)]
    assert [shape(d) for d in found(fn(text))] == want and len(want) == 4


def test_paste_without_header_lines() -> None:
    text = read(VAR / "mysql51-error-log.log")
    (want,) = found(text)
    (got,) = found(from_first_block(text))
    assert shape(got) == shape(want)


STATUS = FIX / "mariadb-laravel-queue-index.txt"


def _section(text: str) -> str:
    a = text.index("LATEST DETECTED DEADLOCK")
    b = text.index("------------\nTRANSACTIONS")
    return text[a:b]


@pytest.mark.parametrize("variant", ["section-no-rules", "from-header", "bare", "quoted"])
def test_status_text_pastes(variant: str) -> None:
    text = read(STATUS)
    want = parse_status(text).deadlock
    assert want is not None
    sec = _section(text)
    paste = {
        "section-no-rules": "Here is what SHOW ENGINE INNODB STATUS said:\n" + sec,
        "from-header": sec,
        "bare": from_first_block(sec),
        "quoted": email_quote(sec),
    }[variant]
    (got,) = found(paste)
    assert shape(got) == shape(want)
    assert diagnose(got).pattern == diagnose(want).pattern


def test_mariadb_victim_zero_is_inferred_with_evidence() -> None:
    text = read(STATUS).replace("*** WE ROLL BACK TRANSACTION (2)",
                                "*** WE ROLL BACK TRANSACTION (0)").replace(
        "*** WE ROLL BACK TRANSACTION (1)", "*** WE ROLL BACK TRANSACTION (0)")
    dl = parse_status(text).deadlock
    assert dl is not None and dl.printed_victim == 0
    d = dl.to_dict()
    assert d["victim_inferred"] is True and "(0)" in d["victim_evidence"]
    assert d["victim"] in (1, 2)
    (from_log,) = found(_section(text))
    assert from_log.victim_inferred and "MDEV-29187" in from_log.victim_evidence


def test_printed_victim_is_not_inferred() -> None:
    d = parse_status(read(STATUS)).deadlock.to_dict()  # type: ignore[union-attr]
    assert "victim_inferred" not in d


def test_recognised_lines_counted() -> None:
    sc = Scanner()
    list(iter_deadlocks(read(VAR / "mysql57-laravel-jobs-cut-delete.log").splitlines(), sc))
    assert sc.recognised >= 8 and sc.lines > 30
    sc2 = Scanner()
    assert list(iter_deadlocks(["hello", "world", "*** not a report"], sc2)) == []


@pytest.mark.parametrize("name", ["mariadb-laravel-queue-index.txt", "mariadb-opposite-order.txt",
                                  "mysql8-manual-example-status.txt",
                                  "mariadb-laravel-legacy-index.txt"])
def test_whole_status_text_through_the_log_reader(name: str) -> None:
    text = read(FIX / name)
    want = parse_status(text).deadlock
    assert want is not None
    (got,) = found(text)
    assert not got.ambiguous
    assert [t.trx_id for t in got.transactions] == [t.trx_id for t in want.transactions]
    assert got.victim == want.victim or want.victim_source != "printed"
