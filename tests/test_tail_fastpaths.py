"""The log tail's shortcuts give what the full path gives: the remembered error-log prefix
(PrefixMemo) over timestamps that change, and the per-statement memos of the deadlock record
(contrib/bench/bench_tail.py, bench_tail_parts.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dbwatch.deadlocks.record import deadlock_record
from dbwatch.parsers.errorlog import iter_deadlocks
from dbwatch.parsers.innodb_logline import PrefixMemo, clean

LINES = [
    "2019-06-12T08:15:42.318301Z 2245 [Note] InnoDB: ",
    "2019-06-12T08:15:42.318320Z 2245 [Note] InnoDB: *** (1) WAITING FOR THIS LOCK TO BE GRANTED:",
    "2019-06-12T08:15:42.3183Z 2245 [Note] InnoDB: shorter fraction",  # timestamp ends earlier
    "2019-06-12T08:15:42.31830012Z 2245 [Note] InnoDB: longer fraction",
    "2019-06-12T08:15:42.318338Z 2246 [Note] InnoDB: another thread",
    "2019-06-12T08:15:42.318338Z 2246 [Note] InnoDB:no blank",
    "2019-06-12T08:15:42.318355Z 2246 [Warning] InnoDB: another level",
    "2019-06-12T08:15:42.318370Z 2246 [Note] [MY-012469] [InnoDB] *** WE ROLL BACK TRANSACTION (1)",
    "2019-06-12T08:15:42.318390Z 2246 [Note] [MY-012469] [InnoDB] *** (2) TRANSACTION:",
    "2019-06-12T08:15:42+02:00 2246 [Note] [MY-012469] [InnoDB] offset instead of Z",
    "2019-06-12T08:15:42.318390Z 2246 [Note] [MY-010000] [Server] not InnoDB",
    "2026-11-22  2:01:37 522 [Note] InnoDB: MariaDB",
    "2026-11-22  2:01:38 522 [Note] InnoDB: MariaDB, next second",
    "2026-11-22 12:01:38 522 [Note] InnoDB: two-digit hour",
    "120906  6:03:32  InnoDB: 5.5",
    "120906  6:03:33  InnoDB: 5.5 next second",
    "2019-06-12T08:15:42.318390Z2246 [Note] InnoDB: no blank after the timestamp",
    "2019-06-12T08:15:42.318390Z 2246 [Note] InnoDB (lock0lock.cc:6496)",
    "2019-06-12T08:15:43.000001Z 2246 [Note] InnoDB: x (lock0lock.cc:6496)",
]


def test_remembered_prefix_reads_like_the_regex() -> None:
    memo = PrefixMemo()
    for line in LINES + LINES[::-1] + LINES:
        assert clean(line, memo) == clean(line), line


def test_statement_memos_hand_out_copies() -> None:
    report = [
        (
            "2019-06-12T08:15:42.318272Z 2245 [Note] InnoDB: Transactions deadlock detected, "
            "dumping detailed information."
        ),
        "*** (1) TRANSACTION:",
        "TRANSACTION 41722335, ACTIVE 0 sec starting index read",
        "MySQL thread id 2240, OS thread handle 1, query id 9 10.0.1.12 app updating",
        "delete from jobs where id = 7 /*controller='orders',action='create',traceparent='00-ab'*/",
        "*** (2) TRANSACTION:",
        "TRANSACTION 41722336, ACTIVE 0 sec fetching rows",
        "MySQL thread id 2245, OS thread handle 2, query id 10 10.0.1.13 app Sending data",
        "delete from jobs where id = 7 /*controller='orders',action='create',traceparent='00-ab'*/",
        "*** WE ROLL BACK TRANSACTION (1)",
    ]
    first = [deadlock_record(d) for d in iter_deadlocks(report)]
    assert len(first) == 1
    trxs = first[0].transactions
    assert trxs[0].origin == {
        "controller": "orders",
        "action": "create",
        "tags": {"traceparent": "00-ab"},
        "source": "sqlcommenter",
        "phrase": "orders#create",
    }
    tags = trxs[0].origin["tags"]
    assert isinstance(tags, dict)
    trxs[0].origin["controller"] = "changed by the caller"
    tags["traceparent"] = "changed"
    trxs[1].origin.clear()
    again = [deadlock_record(d) for d in iter_deadlocks(report)]
    origin = again[0].transactions[0].origin
    assert origin["controller"] == "orders" and origin["tags"] == {"traceparent": "00-ab"}
    assert again[0].transactions[1].origin == again[0].transactions[0].origin


def test_bench_tail_parts_smoke() -> None:
    """The per-part bench runs (CI smoke mode) and every report it writes is found."""
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, str(root / "contrib" / "bench" / "bench_tail_parts.py"), "--smoke"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["report"] for r in rows] == ["mariadb", "mysql57"]
    for r in rows:
        assert r["deadlocks"] == 10
        assert {"scan_ms_per_deadlock", "record_ms_per_deadlock", "insert_ms_per_deadlock"} <= set(
            r
        )
