"""Is this a query log dbwatch can read? Checked before `audit --log` reads it: a wrong file is
one line naming it and what was expected, never a silent "no findings"."""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

from ...errors import UsageError
from ...inputs import looks_binary, open_input

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
        with open_input(path) as fh:
            return fh.read(SNIFF_BYTES)
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


def sql_like(lines: list[str]) -> bool:
    """An SQL transcript: enough of its lines start like SQL (prose and random text do not)."""
    body = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith(("--", "#", "/*"))]
    hits = sum(1 for ln in body if _SQL_LINE.match(ln))
    strong = any(_SQL_STRONG.match(ln) for ln in body)
    return strong and hits * 10 >= len(body) * 3


def check_log(path: str | Path) -> None:
    """Raise UsageError unless the file looks like a query log dbwatch can read."""
    from . import detect_format
    from .lines import quote_depth, unquoted

    p = Path(path)
    data = _head(p)
    if not data.strip():
        raise UsageError(f"{p}: empty file; {LOG_EXPECTED}")
    if looks_binary(data):
        raise UsageError(f"{p}: binary data, not a query log; {LOG_EXPECTED}")
    lines = data.decode("utf-8", "replace").splitlines()[:2000]
    depth = quote_depth(lines)
    if depth:
        lines = list(unquoted(lines, depth))
    if detect_format(lines) == "sql" and not sql_like(lines):
        raise UsageError(f"{p}: nothing recognisable as SQL or a server log; {LOG_EXPECTED}")
