"""Plain SQL transcripts (statements separated by `;`, one connection) and the splitter that
also cuts multi-statement query strings found in server logs."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from dbwatch.sqlpatterns.logs.sink import MAX_ENTRY, Sink

# Quoted text and comments are matched whole so a ';' inside them does not split.
_TOKENS = re.compile(
    r"""'(?:[^'\\]++|\\.|'')*+'|"(?:[^"\\]++|\\.|"")*+"|`[^`]*+`|--[^\n]*"""
    r"""|/\*.*?\*/|;""",
    re.DOTALL,
)
_QUOTED = re.compile(r"""'(?:[^'\\]++|\\.|'')*+'|"(?:[^"\\]++|\\.|"")*+"|`[^`]*+`""", re.DOTALL)
TRANSCRIPT_CONN = "transcript"


def has_several(text: str) -> bool:
    """Whether a query string holds more than one statement (a ';' outside quotes before the
    end). Job payloads are full of ';' (PHP serialize): checked in C before any splitting."""
    body = text.rstrip().rstrip(";")
    return ";" in body and ";" in _QUOTED.sub("", body)


def split_statements(text: str) -> Iterator[str]:
    """Statements of a `;`-separated string, without the separators or empty pieces."""
    start = 0
    for m in _TOKENS.finditer(text):
        if m.group(0) == ";":
            piece = text[start : m.start()].strip()
            if piece:
                yield piece
            start = m.end()
    rest = text[start:].strip()
    if rest:
        yield rest


def read_transcript(lines: Iterable[str], sink: Sink) -> None:
    """A statement ends at a line ending in `;` (the usual shape of dumps and psql/mysql
    transcripts); psql/mysql client commands (`\\x`, `delimiter`) are skipped."""
    buf: list[str] = []
    size = 0
    for line in lines:
        stripped = line.strip()
        if not buf and (
            not stripped or stripped.startswith("\\") or stripped.lower().startswith("delimiter")
        ):
            continue
        if size < MAX_ENTRY:
            buf.append(line)
            size += len(line)
        if stripped.endswith(";"):
            for stmt in split_statements("\n".join(buf)):
                sink.statement(TRANSCRIPT_CONN, None, stmt)
            buf, size = [], 0
    if buf:
        for stmt in split_statements("\n".join(buf)):
            sink.statement(TRANSCRIPT_CONN, None, stmt)
