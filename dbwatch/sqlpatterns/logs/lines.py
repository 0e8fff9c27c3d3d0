"""Streaming line source for query logs: plain or gzip (by magic bytes), bounded line length.

Reads 1 MiB chunks and splits them in C: constant memory however large the log or a line.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from ...frozen import mutable
from ...inputs import open_input

CHUNK = 1 << 20
MAX_LINE = 1 << 20  # longer lines are cut here; the classifier looks at 16 KiB anyway


@mutable
class LineStats:
    bytes: int = 0  # bytes of log text read (after decompression)
    lines: int = 0
    overlong: int = 0  # lines cut at MAX_LINE
    unreadable: int = 0  # lines no reader could make sense of (skipped)


def open_log(path: str | Path) -> BinaryIO:
    """Open a log for binary reading, decompressing gzip when the magic bytes say so."""
    return open_input(path)


def iter_lines(stream: BinaryIO, stats: LineStats, max_line: int = MAX_LINE) -> Iterator[str]:
    """Lines without their newline; invalid UTF-8 is replaced, never fatal."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    carry = ""
    cut = False  # the current line was already cut: drop the rest of it
    while True:
        chunk = stream.read(CHUNK)
        if not chunk:
            break
        stats.bytes += len(chunk)
        text = decoder.decode(chunk)
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        parts = text.split("\n")
        if len(parts) == 1:
            if not cut:
                carry += parts[0]
                if len(carry) > max_line:
                    carry, cut = carry[:max_line], True
                    stats.overlong += 1
            continue
        if not cut:
            parts[0] = carry + parts[0]
            if len(parts[0]) > max_line:
                parts[0] = parts[0][:max_line]
                stats.overlong += 1
        else:
            parts[0] = carry
        carry = parts.pop()
        cut = False
        if len(carry) > max_line:
            carry, cut = carry[:max_line], True
            stats.overlong += 1
        stats.lines += len(parts)
        yield from parts
    carry += decoder.decode(b"", final=True) if not cut else ""
    if carry:
        stats.lines += 1
        yield carry


_QUOTE = re.compile(r"(?:> ?)+")


def quote_depth(head: list[str]) -> int:
    """How many `>` quote marks (e-mail, an issue's reply) every line of a paste carries: 0
    unless at least 9 in 10 of the non-empty lines start with one."""
    body = [ln for ln in head if ln.strip()]
    quoted = [ln for ln in body if ln.startswith(">")]
    if not quoted or len(quoted) * 10 < len(body) * 9:
        return 0
    return min(_QUOTE.match(ln).group(0).count(">") for ln in quoted)  # type: ignore[union-attr]


def unquoted(lines: Iterable[str], depth: int) -> Iterator[str]:
    """The lines without their first `depth` quote marks (and the space after each)."""
    strip = re.compile(rf"(?:> ?){{{depth}}}")
    for line in lines:
        m = strip.match(line)
        yield line[m.end() :] if m else line
