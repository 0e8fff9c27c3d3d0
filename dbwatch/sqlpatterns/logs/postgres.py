"""PostgreSQL log readers (log_statement = 'all'): stderr with common prefixes, csvlog, jsonlog.

Sessions are grouped by session id (%c) when the log has it, else by pid.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator
from typing import cast

from dbwatch.sqlpatterns.logs.sink import MAX_ENTRY, Sink

SEVERITIES = frozenset(
    {
        "LOG",
        "ERROR",
        "WARNING",
        "NOTICE",
        "DETAIL",
        "HINT",
        "STATEMENT",
        "CONTEXT",
        "FATAL",
        "PANIC",
        "INFO",
        "DEBUG",
        "DEBUG1",
        "DEBUG2",
        "DEBUG3",
        "DEBUG4",
        "DEBUG5",
        "LOCATION",
        "QUERY",
    }
)
_SESSION = re.compile(r"(?<![\w.])([0-9a-f]{6,8}\.[0-9a-f]{1,8})(?![\w.])")
_PID = re.compile(r"\[(\d+)\]|\bpid[=:]\s*(\d+)")
_PARAM = re.compile(r"\$(\d+) = (NULL|'(?:[^']++|'')*+(?:'|\Z))")
_VERSION = re.compile(r"starting (PostgreSQL \d+(?:\.\d+)*)")
_CSV_SEVERITY, _CSV_MESSAGE, _CSV_DETAIL, _CSV_PID, _CSV_SESSION = 11, 13, 14, 3, 5


class _Pending:
    """The last statement seen, held until we know whether a DETAIL with parameters follows."""

    __slots__ = ("key", "params", "text")

    def __init__(self) -> None:
        self.key: str | None = None
        self.text = ""
        self.params: dict[str, str] | None = None

    def flush(self, sink: Sink) -> None:
        if self.key is not None:
            sink.statement(self.key, None, self.text, self.params)
            self.key, self.params = None, None


def statement_text(msg: str) -> str | None:
    """The SQL of a `statement:` / `execute <name>:` message (with or without `duration:`)."""
    if msg.startswith("duration: "):
        i = msg.find("  ")
        if i < 0:
            return None
        msg = msg[i + 2 :]
    if msg.startswith("statement: "):
        return msg[11:]
    if msg.startswith("execute "):
        i = msg.find(": ")
        return msg[i + 2 :] if i > 0 else None
    return None


def _message(
    sink: Sink, pending: _Pending, key: str, sev: str, msg: str, detail: str | None = None
) -> None:
    if sev == "DETAIL":
        if pending.key == key and msg.startswith("parameters: "):
            pending.params = {"$" + n: v for n, v in _PARAM.findall(msg[:MAX_ENTRY])}
        return
    if sev != "LOG":
        return
    text = statement_text(msg)
    if text is not None:
        pending.flush(sink)
        pending.key, pending.text = key, text
        if detail and detail.startswith("parameters: "):
            pending.params = {"$" + n: v for n, v in _PARAM.findall(detail[:MAX_ENTRY])}
        return
    if msg.startswith("disconnection: "):
        pending.flush(sink)
        sink.disconnect(key)
    elif msg.startswith(("connection authorized", "connection received")):
        pending.flush(sink)
        sink.connect(key)
    elif msg.startswith("starting PostgreSQL"):
        v = _VERSION.match(msg)
        if v is not None:
            sink.version(v.group(1))


def _session_key(prefix: str) -> str | None:
    m = _SESSION.search(prefix)
    if m is not None:
        return m.group(1)
    p = _PID.search(prefix)
    if p is not None:
        return p.group(1) or p.group(2)
    return None


def read_stderr(lines: Iterable[str], sink: Sink) -> None:
    """`<prefix>SEVERITY:  message`, continuation lines start with a tab."""
    pending = _Pending()
    key: str | None = None
    sev = ""
    parts: list[str] = []
    size = 0
    for line in lines:
        if line.startswith("\t"):
            if parts and size < MAX_ENTRY:
                parts.append(line[1:])
                size += len(line) + 1  # newlines count: empty lines are bounded too
            continue
        i = line.find(":  ")
        j = line.rfind(" ", 0, i) + 1 if i > 0 else -1
        if i < 0 or line[j:i] not in SEVERITIES:
            if line:
                sink.unreadable()
            continue
        if parts and key is not None:
            _message(sink, pending, key, sev, "\n".join(parts))
        sev = line[j:i]
        key = _session_key(line[:j]) or line[:j]
        parts = [line[i + 3 :]]
        size = len(parts[0])
    if parts and key is not None:
        _message(sink, pending, key, sev, "\n".join(parts))
    pending.flush(sink)


def _csv_rows(lines: Iterable[str], sink: Sink) -> Iterator[list[str]]:
    reader = csv.reader(line + "\n" for line in lines)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error:  # a field over csv's size limit, a stray quote
            sink.unreadable()
            continue
        yield row


def read_csvlog(lines: Iterable[str], sink: Sink) -> None:
    pending = _Pending()
    for row in _csv_rows(lines, sink):
        if len(row) < 15:
            sink.unreadable()
            continue
        key = row[_CSV_SESSION] or row[_CSV_PID]
        _message(
            sink, pending, key, row[_CSV_SEVERITY], row[_CSV_MESSAGE][:MAX_ENTRY], row[_CSV_DETAIL]
        )
    pending.flush(sink)


def read_jsonlog(lines: Iterable[str], sink: Sink) -> None:
    pending = _Pending()
    for line in lines:
        if not line:
            continue
        try:
            parsed: object = json.loads(line)
        except ValueError:
            sink.unreadable()
            continue
        if not isinstance(parsed, dict):
            sink.unreadable()
            continue
        rec = cast("dict[str, object]", parsed)
        key = str(rec.get("session_id") or rec.get("pid"))
        sev, msg = rec.get("error_severity", ""), rec.get("message", "")
        detail = rec.get("detail")
        if not isinstance(msg, str) or not isinstance(sev, str):
            sink.unreadable()
            continue
        _message(
            sink, pending, key, sev, msg[:MAX_ENTRY], detail if isinstance(detail, str) else None
        )
    pending.flush(sink)
