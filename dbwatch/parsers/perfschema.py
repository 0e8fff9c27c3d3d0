"""MySQL 8.0.22+ `performance_schema.error_log` rows -> error-log lines for the deadlock scanner.

Each deadlock is several events (MY-012468 then MY-012469 parts, DATA with embedded newlines);
DATA is JSON (`{"msg": …}`) when the JSON log sink feeds the table. Untested live (no MySQL 8
server here): covered by fixtures built from the manual's example.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime

from ..parsers.errorlog import iter_deadlocks
from ..parsers.innodb_deadlock import Deadlock

MAX_ROWS = 20_000


def _ts(value: object) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return str(value or "").replace(" ", "T", 1)


def _data(value: object) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")
    if text.startswith("{"):
        try:
            doc: object = json.loads(text)
        except ValueError:
            return text
        if not isinstance(doc, dict):
            return text
        msg = doc.get("msg")
        return str(msg) if msg is not None else text
    return text


def error_log_lines(rows: Iterable[Mapping[str, object]]) -> Iterator[str]:
    """Each row as the error log file would print it: prefix, then DATA's lines."""
    for i, r in enumerate(rows):
        if i >= MAX_ROWS:
            return
        r = {str(k).lower(): v for k, v in r.items()}  # information_schema's upper case
        prefix = (
            f"{_ts(r.get('logged'))} {r.get('thread_id') or 0} [{r.get('prio') or 'Note'}] "
            f"[{r.get('error_code') or ''}] [{r.get('subsystem') or 'InnoDB'}] "
        )
        lines = _data(r.get("data")).split("\n")
        yield prefix + lines[0]
        yield from lines[1:]


def deadlocks_from_rows(rows: Iterable[Mapping[str, object]]) -> list[Deadlock]:
    return list(iter_deadlocks(error_log_lines(rows)))
