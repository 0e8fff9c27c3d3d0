"""Files a user names: the one input-file opener (gzip recognised by its magic bytes) and binary
sniffing, and the paths a user types (the state database, a listen address), checked before
use, so bad input is one line naming the file and what was expected, never a silent "all
clear" or an exception name."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import IO, BinaryIO

from .errors import UsageError

GZIP_MAGIC = b"\x1f\x8b"


def open_input(path: str | Path) -> BinaryIO:
    """The file's bytes, gunzipped when its first bytes are gzip's magic (whatever its name).
    Raises what open() raises; a corrupt gzip raises (EOFError, gzip.BadGzipFile,
    zlib.error, OSError) when read."""
    raw = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    try:
        magic = raw.read(2)
        raw.seek(0)
    except BaseException:
        raw.close()
        raise
    if magic != GZIP_MAGIC:
        return raw
    raw.close()  # GzipFile opens its own, closed with it
    return gzip.GzipFile(path, "rb")  # type: ignore[return-value]


def is_gzip(stream: IO[bytes]) -> bool:
    """Did open_input decompress this one?"""
    return isinstance(stream, gzip.GzipFile)


def looks_binary(data: bytes) -> bool:
    """The head of a file is not text: a NUL byte, mostly invalid UTF-8 (a character cut at
    the end of the sample is not), or more than 1 % control characters."""
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
