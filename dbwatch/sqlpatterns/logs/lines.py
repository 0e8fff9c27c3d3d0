"""Streaming line source for query logs: plain or gzip (by magic bytes), bounded line length.

Reads 1 MiB chunks and splits them in C: constant memory however large the log or a line.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
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
