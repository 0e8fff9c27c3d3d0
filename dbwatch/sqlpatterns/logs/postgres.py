"""PostgreSQL query logs (log_statement = 'all') on the one log-line reader, parsers/pglog.py:
stderr with any prefix, csvlog, jsonlog.

Sessions are grouped by session id (%c) when the log has it, else by pid.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from dbwatch.parsers import pglog_records
from dbwatch.parsers.pglog import PgRecord, StderrReader, session_of
from dbwatch.parsers.pglog_records import Counts
from dbwatch.sqlpatterns.logs.sink import MAX_ENTRY, Sink

_PARAM = re.compile(r"\$(\d+) = (NULL|'(?:[^']++|'')*+(?:'|\Z))")
_VERSION = re.compile(r"starting (PostgreSQL \d+(?:\.\d+)*)")


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


def _key(rec: PgRecord) -> str:
    """Sessions by %c when the log has it, else by pid, else by the whole prefix."""
    session = rec.session if rec.filled else session_of(rec.prefix)
    return session or (str(rec.pid) if rec.pid is not None else rec.prefix)


def _read(records: Iterable[PgRecord], sink: Sink) -> None:
    pending = _Pending()
    for rec in records:
        _message(
            sink, pending, _key(rec), rec.severity, rec.text("message") or "", rec.text("DETAIL")
        )
    pending.flush(sink)


def read_stderr(lines: Iterable[str], sink: Sink) -> None:
    """`<prefix>SEVERITY:  message`, continuation lines start with a tab (parsers/pglog.py)."""
    reader = StderrReader()
    _read(reader.read(lines), sink)
    if reader.loose + reader.orphan:
        sink.unreadable(reader.loose + reader.orphan)


def read_csvlog(lines: Iterable[str], sink: Sink) -> None:
    counts = Counts()
    _read(pglog_records.read_csvlog(lines, counts), sink)
    if counts.unreadable:
        sink.unreadable(counts.unreadable)


def read_jsonlog(lines: Iterable[str], sink: Sink) -> None:
    counts = Counts()
    _read(pglog_records.read_jsonlog(lines, counts), sink)
    if counts.unreadable:
        sink.unreadable(counts.unreadable)
