"""csvlog and jsonlog records as PgRecords (parsers/pglog.py reads stderr), and which of the
three formats a PostgreSQL log is. Column and key lists: docs/deadlock-grammar.md."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator

from dbwatch.parsers.pglog import MAX_ENTRY, PgRecord, Unwrap

from ..frozen import mutable

_TS = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)")

# csvlog columns (9.0-17; 13 added backend_type, 14 leader_pid and query_id at the end)
CSV_COLUMNS = {
    "timestamp": 0,
    "user": 1,
    "dbname": 2,
    "pid": 3,
    "session_id": 5,
    "error_severity": 11,
    "state_code": 12,
    "message": 13,
    "detail": 14,
    "hint": 15,
    "internal_query": 16,
    "context": 18,
    "statement": 19,
}
_JSON_PARTS = {
    "detail": "DETAIL",
    "hint": "HINT",
    "internal_query": "QUERY",
    "context": "CONTEXT",
    "statement": "STATEMENT",
}


def record_of(rec: dict[str, object], line: int = 0) -> PgRecord:
    """A csvlog row (by CSV_COLUMNS) or a jsonlog object as a PgRecord."""
    pid = rec.get("pid")
    out = PgRecord(
        str(rec.get("error_severity") or ""),
        str(rec.get("message") or "")[:MAX_ENTRY],
        line=line,
        pid=int(pid) if isinstance(pid, int) or (isinstance(pid, str) and pid.isdigit()) else None,
        at=_ts(str(rec.get("timestamp") or "")),
        user=str(rec.get("user") or "") or None,
        dbname=str(rec.get("dbname") or "") or None,
        session=str(rec.get("session_id") or "") or None,
        sqlstate=str(rec.get("state_code") or "") or None,
        filled=True,
    )
    out.add("message", out.message)
    for key, part in _JSON_PARTS.items():
        val = rec.get(key)
        if isinstance(val, str) and val:
            for piece in val[:MAX_ENTRY].split("\n"):
                out.add(part, piece)
    return out


def _ts(text: str) -> str | None:
    m = _TS.search(text)
    return f"{m.group(1)} {m.group(2)}" if m else None


@mutable
class Counts:
    lines: int = 0
    unreadable: int = 0  # lines or rows no reader could interpret


def read_csvlog(
    lines: Iterable[str], counts: Counts, state: str | None = None
) -> Iterator[PgRecord]:
    """Every record, or with `state` only those of that SQLSTATE (the others are not built)."""

    def counted() -> Iterator[str]:
        for ln in lines:
            counts.lines += 1
            yield ln if ln.endswith("\n") else ln + "\n"

    reader = csv.reader(counted())
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error:  # a field over csv's size limit, a stray quote
            counts.unreadable += 1
            continue
        if len(row) < 15:
            counts.unreadable += 1
            continue
        if state is not None and row[12] != state:
            continue
        yield record_of({k: row[i] for k, i in CSV_COLUMNS.items() if i < len(row)}, counts.lines)


def read_jsonlog(
    lines: Iterable[str], counts: Counts, state: str | None = None
) -> Iterator[PgRecord]:
    """Every record, or with `state` only the lines naming that SQLSTATE (others not parsed)."""
    unwrap = Unwrap()
    for raw in lines:
        counts.lines += 1
        if state is not None and state not in raw:
            continue
        line = unwrap(raw)
        if not line:
            continue
        k = line.find("{")
        try:
            parsed: object = json.loads(line[k:]) if k >= 0 else None
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            counts.unreadable += 1
            continue
        yield record_of(parsed, counts.lines)


_CSV_HEAD = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?(?: [A-Za-z+\-0-9:]+)?,")


def detect_format(first: str) -> str:
    """stderr | csvlog | jsonlog, from one non-empty line (wrappers taken off)."""
    s = Unwrap()(first) or ""
    s = s.lstrip()
    if s.startswith("{") and '"timestamp"' in s[:200]:
        return "jsonlog"
    if _CSV_HEAD.match(s):
        return "csvlog"
    return "stderr"
