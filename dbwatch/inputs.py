"""Paths a user types (query logs, the state database): checked before use, so bad input is one
line naming the file and what was expected, never a silent "all clear" or an exception name."""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

from .errors import UsageError

SNIFF_BYTES = 256 * 1024
LOG_EXPECTED = (
    "expected a MySQL/MariaDB general or slow log, a PostgreSQL log (stderr, csvlog, jsonlog) "
    "or an SQL transcript"
)
# Words a line of an SQL transcript starts with (statements and their usual continuation lines).
_SQL_LINE = re.compile(
    r"\s*(select|insert|update|delete|replace|begin|start|commit|rollback|end|savepoint|release"
    r"|set|with|values|from|where|and|or|order|group|limit|for|join|left|inner|returning"
    r"|create|alter|drop|truncate|call|lock|unlock|prepare|execute|deallocate|declare|fetch"
    r"|close|show|use|explain|analyze|vacuum|copy|grant|revoke|do|xa)\b",
    re.IGNORECASE,
)

# At least one line must be unmistakably SQL (a sentence may start with "select" or "and").
_SQL_STRONG = re.compile(
    r"\s*(select\b.*\bfrom\b|select\s+(\d|\*|@@\w|[\w.]+\s*\()|insert\s+into\b|update\s+\S+\s+set\b"
    r"|delete\s+from\b|(begin|commit|rollback|start\s+transaction)\s*;|set\s+\S+\s*=)",
    re.IGNORECASE,
)


def _head(path: Path) -> bytes:
    """The first bytes of the file, gunzipped when it is gzip."""
    try:
        with path.open("rb") as raw:
            magic = raw.read(2)
            raw.seek(0)
            if magic != b"\x1f\x8b":
                return raw.read(SNIFF_BYTES)
            with gzip.GzipFile(fileobj=raw) as gz:
                return gz.read(SNIFF_BYTES)
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory; {LOG_EXPECTED}") from None
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (EOFError, gzip.BadGzipFile, zlib.error):
        raise UsageError(
            f"{path}: gzip file truncated or corrupt in its first {SNIFF_BYTES // 1024} KiB; "
            f"{LOG_EXPECTED}"
        ) from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read log ({exc.strerror or exc})") from None


def _binary(data: bytes) -> bool:
    if b"\x00" in data:
        return True
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(data) - 4:  # not just a character cut at the sniff boundary
            text = data.decode("utf-8", "replace")
            return text.count("\ufffd") > len(text) // 20
        return False
    ctrl = sum(1 for ch in text if ord(ch) < 32 and ch not in "\t\n\r\f")
    return ctrl > len(text) // 100


def sql_like(lines: list[str]) -> bool:
    """An SQL transcript: enough of its lines start like SQL (prose and random text do not)."""
    body = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith(("--", "#", "/*"))]
    hits = sum(1 for ln in body if _SQL_LINE.match(ln))
    strong = any(_SQL_STRONG.match(ln) for ln in body)
    return strong and hits * 10 >= len(body) * 3


def check_log(path: str | Path) -> None:
    """Raise UsageError unless the file looks like a query log dbwatch can read."""
    from .sqlpatterns.logs import detect_format

    p = Path(path)
    data = _head(p)
    if not data.strip():
        raise UsageError(f"{p}: empty file; {LOG_EXPECTED}")
    if _binary(data):
        raise UsageError(f"{p}: binary data, not a query log; {LOG_EXPECTED}")
    lines = data.decode("utf-8", "replace").splitlines()[:2000]
    if detect_format(lines) == "sql" and not sql_like(lines):
        raise UsageError(f"{p}: nothing recognisable as SQL or a server log; {LOG_EXPECTED}")


SQLITE_MAGIC = b"SQLite format 3\x00"


def check_state_path(path: str | Path, must_exist: bool = False) -> Path:
    """The state database path: a SQLite file dbwatch may create or open."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise UsageError(f"--state {p}: is a directory; expected a SQLite state file")
    if not p.exists():
        if must_exist:
            raise UsageError(f"--state {p}: no such file (has `dbwatch watch` run?)")
        up = next((a for a in p.parents if a.exists()), None)
        if up is not None and not up.is_dir():
            raise UsageError(f"--state {p}: {up} is not a directory")
        return p
    try:
        with p.open("rb") as fh:
            magic = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise UsageError(f"--state {p}: cannot read ({exc.strerror or exc})") from None
    if magic and magic != SQLITE_MAGIC:
        raise UsageError(f"--state {p}: not a dbwatch state database (SQLite)")
    return p


def check_listen_address(option: str, address: str) -> tuple[str, int]:
    """HOST:PORT (or :PORT, [v6]:PORT) to listen on, with a port 1-65535."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise UsageError(
            f"{option} {address!r}: expected HOST:PORT with a port 1-65535, e.g. 127.0.0.1:9187"
        )
    return host.strip("[]") or "0.0.0.0", int(port)
