"""Read deadlocks from a file a user names: InnoDB status text, a MySQL/MariaDB error log or
a PostgreSQL log (stderr, csvlog, jsonlog), plain or gzip. A file with nothing recognisable
in it is an error naming the file, never "no deadlocks"."""

from __future__ import annotations

import io
import itertools
import sys
import zlib
from collections.abc import Iterator
from typing import IO

from ..errors import UsageError
from ..frozen import mutable
from ..inputs import is_gzip, open_input
from ..parsers.errorlog import CHUNK, Scanner, iter_deadlocks, iter_deadlocks_bytes
from ..parsers.pg_deadlock import PgScanner, detect_format, iter_pg_deadlocks
from .record import DeadlockRecord, deadlock_record

EXPECTED = (
    "expected SHOW ENGINE INNODB STATUS text, a MySQL/MariaDB error log with "
    "innodb_print_all_deadlocks=ON, or a PostgreSQL log (stderr, csvlog or jsonlog)"
)
MAX_STATUS = 4 * 1024 * 1024


@mutable
class ReadStats:
    lines: int = 0
    recognised: int = 0
    kind: str = "?"


def open_text(path: str) -> IO[str]:
    """The file as text (gzip recognised by its magic); binary files are refused."""
    if path == "-":
        return sys.stdin
    raw = open_binary(path)
    if not is_gzip(raw):
        head = raw.read(8192)
        raw.seek(0)
        if b"\x00" in head:
            raw.close()
            raise UsageError(f"{path}: a binary file, not a log or status text; {EXPECTED}")
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")


def _guarded(path: str, lines: Iterator[str]) -> Iterator[str]:
    """Lines, with a corrupt/truncated gzip or a binary tail turned into one-line errors."""
    try:
        for i, line in enumerate(lines):
            if "\x00" in line[:4096] and i < 1000:
                raise UsageError(f"{path}: binary data at line {i + 1}; {EXPECTED}")
            yield line
    except (EOFError, OSError, zlib.error) as exc:
        raise UsageError(f"{path}: truncated or corrupt gzip ({exc}); {EXPECTED}") from None


def _is_pg(first: list[str]) -> bool:
    from ..parsers.pg_deadlock import _severity_split

    for line in first:
        if line.strip():
            if detect_format(line) != "stderr":
                return True
            if _severity_split(line) is not None and "InnoDB" not in line:
                return True
    return False


def open_binary(path: str) -> IO[bytes]:
    """The file's bytes (gunzipped when gzip); binary files are refused."""
    if path == "-":
        return sys.stdin.buffer
    try:
        return open_input(path)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror}") from None


def _chunks(path: str, fh: IO[bytes]) -> Iterator[bytes]:
    try:
        first = True
        while chunk := fh.read(CHUNK):
            if first and b"\x00" in chunk[:8192]:
                raise UsageError(f"{path}: a binary file, not a log or status text; {EXPECTED}")
            first = False
            yield chunk
    except (EOFError, OSError, zlib.error) as exc:
        raise UsageError(f"{path}: truncated or corrupt gzip ({exc}); {EXPECTED}") from None


def read_log(path: str, stats: ReadStats) -> Iterator[DeadlockRecord]:
    """Deadlock records (SPEC §6 shape with diagnosis) from an error log or PostgreSQL log."""
    with open_binary(path) as fh:
        chunks = _chunks(path, fh)
        first = next(chunks, b"")
        head = first[:65536].decode("utf-8", "replace").splitlines()[:200]
        stream = itertools.chain([first], chunks)
        if _is_pg(head):
            stats.kind = "postgresql log"
            pg = PgScanner()
            try:
                for dl in iter_pg_deadlocks(_lines(stream), pg):
                    yield deadlock_record(dl)
            finally:
                stats.lines, stats.recognised = pg.lines, pg.recognised
            return
        stats.kind = "error log"
        sc = Scanner()
        try:
            for dl in iter_deadlocks_bytes(stream, sc):
                yield deadlock_record(dl)
        finally:
            stats.lines, stats.recognised = sc.lines, sc.recognised


def _lines(chunks: Iterator[bytes]) -> Iterator[str]:
    """Text lines (with their newline) from byte chunks, decoded once per chunk."""
    rest = b""
    for chunk in chunks:
        data = rest + chunk
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        yield from data[:cut].decode("utf-8", "replace").splitlines(keepends=True)
    if rest:
        yield rest.decode("utf-8", "replace")


def read_status_file(path: str, stats: ReadStats) -> list[DeadlockRecord]:
    """A saved status text; a paste of only the deadlock (or of a log) is read tolerantly."""
    from ..parsers.innodb_status import parse_status

    with open_text(path) as fh:
        text = "".join(_guarded(path, iter(fh.readline, "")))[:MAX_STATUS]
    stats.lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    st = parse_status(text)
    if st.sections:
        stats.kind, stats.recognised = "status text", len(st.sections)
        if st.deadlock is not None or "LATEST DETECTED DEADLOCK" in st.sections:
            return [deadlock_record(st.deadlock)] if st.deadlock else []
    sc = Scanner()
    out = [deadlock_record(d) for d in iter_deadlocks(text.splitlines(), sc)]
    stats.recognised += sc.recognised
    if stats.kind == "?":
        stats.kind = "text"
    return out


def require_recognisable(path: str, stats: ReadStats) -> None:
    if stats.lines == 0:
        raise UsageError(f"{path}: empty file; {EXPECTED}")
    if stats.recognised == 0:
        raise UsageError(f"{path}: nothing recognisable in {stats.lines} lines; {EXPECTED}")
