"""Tail a server log (target key `log_file`) for every deadlock, exactly once.

Position = (inode, offset, sha256 of the first and last 4 KB before the offset), kept in the state DB's
`meta` table and committed in the same transaction as the deadlocks it covers, so a SIGKILL
anywhere re-reads at most what was not yet committed (and `record_deadlock`'s key drops any
copy). Rotation:
- rename (logrotate `create`, FLUSH ERROR LOGS after mv): the inode changed; the rest of the
  old file is read from its new name in the same directory (found by inode), then the new
  file from 0;
- copytruncate: same inode, file shorter than the offset or the bytes before the offset no
  longer hash the same; the copy (a sibling whose first `offset` bytes hash the same) is read
  from the offset, then the truncated file from 0.
A report still being written (no victim line yet) is re-read from its first line next time.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import BinaryIO, Protocol

from ..frozen import frozen
from ..parsers.errorlog import open_block_start, slim
from ..parsers.innodb_deadlock import Deadlock
from ..parsers.innodb_storm import Deriving, full_scan, scan_buffer
from ..parsers.pg_deadlock import PgScanner, detect_format

log = logging.getLogger(__name__)

HASH_SPAN = 4096
MAX_READ = 64 * 1024 * 1024  # per poll; the rest waits for the next one
MAX_LINE_BYTES = 1024 * 1024


@frozen
class Position:
    inode: int
    offset: int
    head: str  # head_hash(): the bytes before offset

    def to_json(self) -> str:
        return json.dumps({"inode": self.inode, "offset": self.offset, "head": self.head})

    @classmethod
    def from_json(cls, raw: str | None) -> Position | None:
        try:
            d: object = json.loads(raw or "")
        except ValueError:
            return None
        if not isinstance(d, dict):
            return None
        inode, offset, head = d.get("inode"), d.get("offset"), d.get("head")
        if not isinstance(inode, (int, str)) or not isinstance(offset, (int, str)) or head is None:
            return None
        try:
            return cls(int(inode), int(offset), str(head))
        except ValueError:
            return None


def head_hash(fh: BinaryIO, offset: int) -> str:
    """sha256 of the file's first and last HASH_SPAN bytes before offset: reports look
    alike, so the end alone could match a different file of the same size."""
    h = hashlib.sha256()
    fh.seek(0)
    h.update(fh.read(min(offset, HASH_SPAN)))
    start = max(0, offset - HASH_SPAN)
    fh.seek(start)
    h.update(fh.read(offset - start))
    return h.hexdigest()


def _scan(
    fh: BinaryIO,
    offset: int,
    engine: str,
    final: bool,
    fast: bool = True,
    derive: Deriving | None = None,
) -> tuple[list[Deadlock], int]:
    """Deadlocks complete in fh[offset:]; returns them and the safe resume offset. `fast`
    (MySQL/MariaDB): through innodb_storm's shapes, else the Scanner on every line. `derive`:
    what the caller makes of each deadlock is added to derive.out in order, and the deadlocks
    are not returned."""
    storm = fast and engine != "postgresql"
    if storm:
        done = len(derive.out) if derive is not None else 0
        try:
            return _scan_only(fh, offset, engine, final, True, derive)
        except Exception:  # a fault of the shortcut never stops the tail: the full way
            log.exception("reading the log by report shape failed; reading it line by line")
            if derive is not None:
                del derive.out[done:]
    found, safe = _scan_only(fh, offset, engine, final, False, None)
    if derive is not None:
        for dl in found:
            derive.add(dl)
        return [], safe
    return found, safe


def _scan_only(
    fh: BinaryIO, offset: int, engine: str, final: bool, fast: bool, derive: Deriving | None
) -> tuple[list[Deadlock], int]:
    end = fh.seek(0, os.SEEK_END)
    fh.seek(offset)
    # read(n) allocates n first: MAX_READ itself (64 MB) cost 1 ms a poll; what is there only
    data = fh.read(max(0, min(MAX_READ, end - offset)))
    cut = data.rfind(b"\n") + 1
    if final and cut < len(data):
        cut = len(data)
    data = data[:cut]
    pos = offset
    out: list[Deadlock] = []
    if engine == "postgresql":
        pg = PgScanner()
        first = data[:4096].decode("utf-8", "replace").split("\n", 1)[0]
        fmt = detect_format(first) if first.strip() else "stderr"
        if fmt != "stderr":
            from ..parsers.pg_deadlock import iter_pg_deadlocks

            if fmt == "csvlog" and not final:
                # a CSV record may span lines (DETAIL): consume up to the last record start,
                # the last record waits until the next one begins
                k = data.rfind(b"\n2")
                data = data[: k + 1] if k >= 0 else b""
            text = data.decode("utf-8", "replace").splitlines(keepends=True)
            return list(iter_pg_deadlocks(text, pg)), offset + len(data)
        safe = offset + len(data)
        starts: list[int] = []  # offset of each line, to go back to an open message's start
        for raw in data.splitlines(keepends=True):
            starts.append(pos)
            pg.feed_stderr(raw[:MAX_LINE_BYTES].decode("utf-8", "replace"))
            pos += len(raw)
            out.extend(pg.out)
            pg.out = []
        cur = pg.reader.cur
        if cur is not None and pg.waiting_for_detail and not final:
            safe = starts[cur.line - 1]  # the entry's DETAIL is not written yet
        else:
            out.extend(pg.close())
        return out, safe
    if fast:  # a storm's reports built from their shapes; equal to the full scan below
        out, still_open = scan_buffer(data, final, derive=derive)
    else:
        out, still_open = full_scan(slim(data), final)
    if still_open:
        return out, offset + open_block_start(data)  # a report still being written: re-read it
    return out, offset + len(data)


def _sibling_with_inode(path: Path, inode: int) -> Path | None:
    try:
        for entry in os.scandir(path.parent):
            if entry.name != path.name and entry.is_file() and entry.inode() == inode:
                return Path(entry.path)
    except OSError:
        return None
    return None


def _sibling_copy(path: Path, pos: Position) -> Path | None:
    """After copytruncate: the rotated copy starts with the bytes we already read."""
    try:
        entries = sorted(
            (e for e in os.scandir(path.parent) if e.name.startswith(path.name + ".")),
            key=lambda e: -e.stat().st_mtime,
        )
    except OSError:
        return None
    for e in entries[:5]:
        if e.name.endswith(".gz") or e.stat().st_size < pos.offset:
            continue
        with open(e.path, "rb") as fh:
            if head_hash(fh, pos.offset) == pos.head:
                return Path(e.path)
    return None


def poll(
    path: Path,
    engine: str,
    pos: Position | None,
    warned: set[str] | None = None,
    derive: Deriving | None = None,
) -> tuple[list[Deadlock], Position | None]:
    """New deadlocks since `pos` and the position to save; an unreadable file changes nothing
    and is logged — once while it stays unreadable when the caller keeps a `warned` set (the
    daemon does), else each time. `derive`: what the caller makes of each deadlock is in
    derive.out, in order, instead of the deadlocks."""
    if derive is not None:
        derive.out.clear()
    try:
        found = _poll(path, engine, pos, derive)
    except OSError as exc:
        if derive is not None:
            derive.out.clear()
        if warned is None or str(path) not in warned:
            log.warning("log_file %s: cannot read: %s", path, exc.strerror or exc)
        if warned is not None:
            warned.add(str(path))
        return [], pos
    if warned is not None:
        warned.discard(str(path))
    return found


def _poll(
    path: Path, engine: str, pos: Position | None, derive: Deriving | None = None
) -> tuple[list[Deadlock], Position | None]:
    """A first look starts at the end: what is already in the log is history (read it with
    `dbwatch deadlocks --log`), not news to alert on."""
    st = path.stat()
    found: list[Deadlock] = []
    offset = 0
    if pos is None:
        with open(path, "rb") as fh:
            end = st.st_size
            return [], Position(st.st_ino, end, head_hash(fh, end))
    if pos.inode != st.st_ino:
        old = _sibling_with_inode(path, pos.inode)
        if old is not None:
            with open(old, "rb") as fh:
                found += _scan(fh, pos.offset, engine, final=True, derive=derive)[0]
        else:
            log.warning("log_file %s was rotated and its old file is gone", path)
    else:
        with open(path, "rb") as fh:
            same = st.st_size >= pos.offset and head_hash(fh, pos.offset) == pos.head
        if same:
            offset = pos.offset
        else:  # truncated in place (copytruncate) or rewritten
            copy = _sibling_copy(path, pos)
            if copy is not None:
                with open(copy, "rb") as fh:
                    found += _scan(fh, pos.offset, engine, final=True, derive=derive)[0]
            else:
                log.warning("log_file %s was truncated; reading it from the start", path)
    with open(path, "rb") as fh:
        more, safe = _scan(fh, offset, engine, final=False, derive=derive)
        found += more
        return found, Position(st.st_ino, safe, head_hash(fh, safe))


META_KEY = "deadlock-log:{target}"


class Cursor(Protocol):
    def fetchone(self) -> Mapping[str, object] | None: ...  # a state row, by column name


class MetaDb(Protocol):
    """The state database connection (sqlite3.Connection or the PostgreSQL state's)."""

    def execute(self, sql: str, params: Sequence[str] = (), /) -> Cursor: ...


class StateDb(Protocol):
    def transaction(self) -> AbstractContextManager[MetaDb]: ...


def load_position(state: StateDb, target: str) -> Position | None:
    with state.transaction() as db:
        row = db.execute(
            "SELECT value FROM meta WHERE key = ?", (META_KEY.format(target=target),)
        ).fetchone()
    value = row["value"] if row else None
    return Position.from_json(value if isinstance(value, str) else None)


def save_position(db: MetaDb, target: str, pos: Position) -> None:
    db.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",  # SQLite and PostgreSQL
        (META_KEY.format(target=target), pos.to_json()),
    )
