"""Stream deadlocks out of a MySQL/MariaDB error log written with innodb_print_all_deadlocks=ON.

Handles MariaDB's block form, MySQL 5.6/5.7 prefixes and MySQL 8's MY-012468/MY-012469
event lines. Constant memory: one bounded block at a time; garbage lines are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from dbwatch.parsers.innodb_common import MAX_LINE, is_record_dump, normalize_ts
from dbwatch.parsers.innodb_deadlock import TOO_DEEP, Deadlock, feed_line, finish, new_state

MAX_BLOCK_LINES = 50_000  # a real report is a few hundred lines; beyond this, give up on it

# "<timestamp> <thread> [Level] [MY-012469] [InnoDB] body" (MySQL 8),
# "<timestamp> <thread> [Level] InnoDB: body" (MariaDB, MySQL 5.7),
# "<timestamp> <hex thread> InnoDB: body" (MySQL 5.6).
_PREFIX = re.compile(
    r"^(\d{4}-\d{2}-\d{2}[ T]\s*\d{1,2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\d{6}\s+\d{1,2}:\d{2}:\d{2})"
    r"(?:\s+(?:0x)?([0-9A-Fa-f]+))?(?:\s+\[(\w+)\])?(?:\s+\[(MY-\d+)\])?"
    r"(?:\s+(\[InnoDB\]|InnoDB:))?(?: (.*))?$"
)
_SRC_SUFFIX = re.compile(r" \([\w./-]+\.cc:\d+\)$")
_START = "deadlock detected, dumping detailed information"


def _split(line: str) -> tuple[str | None, str | None, bool, str] | None:
    """(timestamp, thread, is_innodb, body) of a prefixed log line, else None."""
    if not line or not line[0].isdigit():
        return None
    m = _PREFIX.match(line)
    if not m:
        return None
    body = _SRC_SUFFIX.sub("", m.group(6) or "")
    innodb = m.group(5) is not None or (m.group(4) or "").startswith("MY-0124")
    return m.group(1), m.group(2), innodb, body


def _is_report_body(body: str) -> bool:
    b = body.strip()
    return not b or b.startswith("***") or TOO_DEEP in b


class _Block:
    def __init__(self, at: str | None, thread: str | None) -> None:
        self.state = new_state(at)
        self.thread = thread
        self.lines = 0

    def feed(self, line: str) -> None:
        self.lines += 1
        feed_line(self.state, line)

    @property
    def done(self) -> bool:
        return self.state.victim is not None or self.lines > MAX_BLOCK_LINES


def iter_deadlocks(lines: Iterable[str]) -> Iterator[Deadlock]:
    """Every deadlock report in the log, in order. Never raises on bad input."""
    block: _Block | None = None
    for raw in lines:
        if not isinstance(raw, str):
            raw = str(raw)
        if raw[:1] == " " and is_record_dump(raw):
            continue  # row contents: most of a report's bytes
        line = raw[:MAX_LINE].rstrip("\r\n")
        parts = _split(line)
        if parts is not None:
            ts, thread, innodb, body = parts
            if _START in body.lower():
                if block is not None and (dl := finish(block.state)) is not None:
                    yield dl
                block = _Block(normalize_ts(ts or "")[0], thread)
                continue
            if block is None:
                continue
            if thread != block.thread:
                continue  # another thread's message interleaved
            if not (innodb and _is_report_body(body)) and body.strip():
                if (dl := finish(block.state)) is not None:
                    yield dl  # the report ended without its victim line
                block = None
                continue
            line = body
        elif block is None:
            continue
        block.feed(line)
        if block.done:
            if (dl := finish(block.state)) is not None:
                yield dl
            block = None
    if block is not None and (dl := finish(block.state)) is not None:
        yield dl
