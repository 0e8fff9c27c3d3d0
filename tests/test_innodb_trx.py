"""The TRANSACTIONS list: details parsed on first access give what an eager parse gives."""
from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

from dbwatch.parsers.innodb_status import TrxInfo, parse_status

FIX = Path(__file__).parent / "fixtures" / "innodb"


def _status() -> str:
    return (FIX / "mariadb-laravel-queue-index.txt").read_text(encoding="utf-8")


def test_lazy_details_match_a_full_load() -> None:
    a, b = parse_status(_status()), parse_status(_status())
    assert a.transactions and len(a.transactions) == len(b.transactions)
    for x, y in zip(a.transactions, b.transactions):
        loaded = x.to_dict()                       # forces every detail of x
        assert y.thread_id == loaded["thread_id"] and y.query == loaded["query"]
        assert x == y and hash(x) == hash(y)
        assert list(loaded)[:-1] == [f.name for f in dataclasses.fields(TrxInfo)
                                     if f.name != "waiting_lock_line"]
    waiting = [t for t in b.transactions if t.lock_wait]
    assert waiting and all(t.waiting_lock is not None for t in waiting)
    json.dumps(b.to_dict())


def test_unread_entry_pickles_and_compares() -> None:
    t = parse_status(_status()).transactions[0]
    copy = pickle.loads(pickle.dumps(t))
    assert copy == t and copy.to_dict() == t.to_dict()
    assert "_lines" not in vars(t)


def test_eager_construction_and_missing_attribute() -> None:
    t = TrxInfo(trx_id="1", state="not started", active_seconds=None)
    assert t.thread_id is None and t.lock_wait is False and t.query is None
    try:
        t.no_such_field  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError:
        pass
    else:
        raise AssertionError("expected AttributeError")
