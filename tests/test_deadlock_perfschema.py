"""MySQL 8.0.22+ performance_schema.error_log rows (fixture from the manual's example; untested
live: no MySQL 8 server here) give the same deadlock as the error log file, and MY102 reports
each one."""
from __future__ import annotations

import json
from pathlib import Path

from dbwatch.parsers.perfschema import deadlocks_from_rows, error_log_lines
from dbwatch.parsers.errorlog import iter_deadlocks

FIX = Path(__file__).parent / "fixtures" / "innodb"
DATA = json.loads((FIX / "mysql8-perfschema-error-log.json").read_text())


def test_rows_read_like_the_file() -> None:
    with open(FIX / "mysql8-manual-example-error.log") as fh:
        (want,) = list(iter_deadlocks(fh))
    for key in ("rows", "json_sink_rows"):
        (got,) = deadlocks_from_rows(DATA[key])
        assert got.victim == want.victim == 2
        assert [t.trx_id for t in got.transactions] == [t.trx_id for t in want.transactions]
        assert [(lk.n, lk.waiting, lk.table) for lk in got.locks] == [
            (lk.n, lk.waiting, lk.table) for lk in want.locks]
        assert got.at == want.at


def test_lines_keep_multi_line_data() -> None:
    lines = list(error_log_lines(DATA["rows"]))
    assert lines[0].endswith("[MY-012468] [InnoDB] Transactions deadlock detected, dumping "
                             "detailed information.")
    assert any(ln.startswith("TRANSACTION 2107") for ln in lines)
