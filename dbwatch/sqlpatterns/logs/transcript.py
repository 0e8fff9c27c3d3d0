"""Plain SQL transcripts (statements separated by `;`, one connection) and the splitter that
also cuts multi-statement query strings found in server logs."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from dbwatch.sqlpatterns.logs.sink import MAX_ENTRY, Sink

# Quoted text and comments are matched whole so a ';' inside them does not split. Every
# opener matches (an unclosed one runs to the end, as the server reads it), so no position
# is scanned twice: linear time whatever the text (issue 18: 96 KB took 8.7 s).
_QUOTED_PATTERN = (
    r"""'(?:[^'\\]++|\\.?|'')*+(?:'|\Z)|"(?:[^"\\]++|\\.?|"")*+(?:"|\Z)|`[^`]*+(?:`|\Z)"""
)
# One statement up to its ';' (or the end) in one match: runs of plain text, quoted text and
# comments, each alternative told apart by its first character, the loop possessive.
_STATEMENT = re.compile(
    r"""[\s;]*+((?:[^;'"`/-]++|""" + _QUOTED_PATTERN + r"""|--[^\n]*|/\*.*?(?:\*/|\Z)|[/-])*+)""",
    re.DOTALL,
)
TRANSCRIPT_CONN = "transcript"


def has_several(text: str) -> bool:
    """Whether a query string holds more than one statement (a ';' outside quotes before the
    end). Job payloads are full of ';' (PHP serialize): checked in C before any splitting."""
    body = text.rstrip().rstrip(";")
    return ";" in body and Split(body, 1).capped


MAX_PIECES = 256  # statements taken from one query string or transcript entry


class Split:
    """The statements of one `;`-separated string, at most `limit` of them."""

    __slots__ = ("capped", "pieces")

    def __init__(self, text: str, limit: int = MAX_PIECES) -> None:
        self.pieces: list[str] = []
        self.capped = False  # more statements followed: not examined (counted by the caller)
        pos, end = 0, len(text)
        while pos <= end:
            m = _STATEMENT.match(text, pos)  # always matches (maybe "")
            assert m is not None
            stop = m.end()
            piece = m.group(1).strip()
            pos = stop + 1  # past the ';'
            if not piece:
                continue
            if len(self.pieces) >= limit:
                self.capped = True
                return
            self.pieces.append(piece)


def split_statements(text: str, limit: int = MAX_PIECES) -> Iterator[str]:
    """Statements of a `;`-separated string, without the separators or empty pieces."""
    yield from Split(text, limit).pieces


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
            size += len(line) + 1  # newlines count: empty lines are bounded too
        if stripped.endswith(";"):
            _emit(sink, "\n".join(buf))
            buf, size = [], 0
    if buf:
        _emit(sink, "\n".join(buf))


def _emit(sink: Sink, text: str) -> None:
    split = Split(text)
    for stmt in split.pieces:
        sink.statement(TRANSCRIPT_CONN, None, stmt)
    if split.capped:
        sink.unreadable()
