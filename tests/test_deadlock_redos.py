"""Linear-time parsing of hostile text (issue 18.2 for the deadlock parsers): every parser stays
under 50 ms CPU per 100 KB on generated worst-case inputs."""
from __future__ import annotations

import gc
import time

import pytest

from dbwatch.deadlocks.diagnosis import diagnose
from dbwatch.parsers.statements import classify
from dbwatch.parsers.errorlog import iter_deadlocks
from dbwatch.parsers.innodb_common import parse_lock_line, split_table
from dbwatch.parsers.innodb_status import parse_status
from dbwatch.parsers.pg_deadlock import iter_pg_deadlocks

SIZE = 100_000
BUDGET = 0.050
UNITS = ["/*", "*/", "/**/", "'", '"', "`", "(", ")", "\\", " ", "\t", " of table ",
         " trx id ", "RECORD LOCKS space id 1 page no 2 n bits 3 index ", "*** ",
         "2024-01-01 00:00:00 ", "> ", "for update ", " from ", "a.", "Process 1 waits for ",
         "; blocked by process 2.", "deadlock detected"]


def inputs() -> list[tuple[str, str]]:
    out = []
    for u in UNITS:
        body = u * (SIZE // len(u))
        out.append((f"repeat {u!r}", body))  # one long line
        out.append((f"lines {u!r}", "\n".join([u * 40] * (SIZE // (len(u) * 40 + 1)))))
    prefix = "RECORD LOCKS space id 1 page no 2 n bits 3 index "
    out.append(("lock of table", prefix + " of table " * 9000))
    out.append(("report + comment", "*** (1) TRANSACTION:\nTRANSACTION 1, ACTIVE 1 sec\n"
                "MySQL thread id 1, query id 1 h u\n" + "select /*" * 9000))
    return out


def cpu(fn, budget: float = 0.0) -> float:  # type: ignore[no-untyped-def]
    """CPU of one parse, the collector held off (a full collection of the test worker's heap
    once cost 90 ms inside a 5 ms parse); tried again, up to three times, only when over budget."""
    best = float("inf")
    for _ in range(3):
        gc.disable()
        try:
            t0 = time.process_time()
            fn()
            best = min(best, time.process_time() - t0)
        finally:
            gc.enable()
        if best <= budget:
            break
    return best


@pytest.mark.parametrize("name,text", inputs(), ids=[n for n, _ in inputs()])
def test_every_parser_is_linear(name: str, text: str) -> None:
    scale = max(len(text), 1) / SIZE
    budget = BUDGET * max(scale, 1)
    lines = text.splitlines()
    costs = {
        "status": cpu(lambda: parse_status(text), budget),
        "errorlog": cpu(lambda: [diagnose(d) for d in iter_deadlocks(lines)], budget),
        "pglog": cpu(lambda: [diagnose(d) for d in iter_pg_deadlocks(lines)], budget),
        "lockline": cpu(lambda: [parse_lock_line(ln) for ln in lines[:50]], budget),
        "table": cpu(lambda: split_table(text[:16384]), budget),
        "statement": cpu(lambda: classify(text), budget),
    }
    slow = {k: round(v * 1000, 1) for k, v in costs.items() if v > budget}
    assert not slow, f"{name}: ms per 100 KB over budget: {slow}"
