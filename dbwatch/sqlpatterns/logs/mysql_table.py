"""The general log kept as a table (`log_output = 'TABLE'`, the default on RDS and Aurora):
`mysql.general_log` as a user hands it over. Its rows are (event_time, user_host, thread_id,
server_id, command_type, argument), in any of the shapes the clients print them:

- the client's batch output (`mysql -B -e 'SELECT * FROM mysql.general_log'`, or `-e`
  redirected): tab-separated, a header line, `\\n` `\\t` `\\\\` `\\0` escaped;
- the client's table output (`| … | … |`), whose cells hold a statement's raw newlines;
- its vertical output (`\\G`: `*** 1. row ***`, then `   argument: …`);
- the CSV engine's own file (`general_log.CSV`): quoted fields, backslash escapes.

Commands mean what they do in the general log file (mysql.py): Query/Execute are statements.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from dbwatch.sqlpatterns.logs.mysql import _NEW_SESSION, _STATEMENT_COMMANDS
from dbwatch.sqlpatterns.logs.sink import MAX_ENTRY, Sink

_TIME = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?"
BATCH_HEADER = "event_time\tuser_host\tthread_id\tserver_id\tcommand_type\targument"
BATCH_ROW = re.compile(rf"({_TIME})\t[^\t]*\t(\d+)\t\d+\t([^\t]+)\t(.*)", re.DOTALL)
BOX_HEADER = re.compile(r"\|\s*event_time\s*\|\s*user_host\s*\|\s*thread_id\s*\|")
BOX_ROW = re.compile(rf"\| ({_TIME}) \| .*? \| +(\d+) \| +\d+ \| ([^|]+?) *\| ?(.*)", re.DOTALL)
CSV_ROW = re.compile(
    rf'"({_TIME})","(?:[^"\\]|\\.|"")*",(\d+),\d+,"([^"]*)","((?:[^"\\]|\\.|"")*)"$',
    re.DOTALL,
)
VERTICAL_ROW = re.compile(r"\*{5,} \d+\. row \*{5,}$")
VERTICAL_FIELD = re.compile(
    r" *(event_time|user_host|thread_id|server_id|command_type|argument): ?(.*)", re.DOTALL
)
_ESCAPES = {"n": "\n", "t": "\t", "0": "\0", "r": "\r", "\\": "\\", '"': '"', "Z": "\x1a"}
_ESCAPED = re.compile(r"\\(.)|\"\"", re.DOTALL)


def looks_like_table(head: list[str]) -> bool:
    """The first lines are mysql.general_log rows in one of the shapes above."""
    for line in head:
        if line.startswith(BATCH_HEADER) or BOX_HEADER.match(line):
            return True
        if BATCH_ROW.match(line) or CSV_ROW.match(line):
            return True
    return any(VERTICAL_ROW.match(ln) for ln in head) and any(
        ln.strip().startswith("command_type:") for ln in head
    )


def _unescape(text: str) -> str:
    if "\\" not in text and '""' not in text:
        return text
    return _ESCAPED.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)) if m.group(1) else '"', text)


def rows(lines: Iterable[str], unreadable: list[int]) -> Iterator[tuple[str, str, str, str]]:
    """(event_time, thread_id, command_type, argument) of each row, in file order."""
    pending: list[str] | None = None  # a table/vertical row whose argument may go on
    row: tuple[str, str, str] | None = None
    size = 0
    vertical: dict[str, str] = {}
    last_field = ""
    for line in lines:
        m = BATCH_ROW.match(line)
        if m is not None:
            if row is not None and pending is not None:
                yield (*row, "\n".join(pending))
            row, pending = None, None
            yield m.group(1), m.group(2), m.group(3), _unescape(m.group(4))
            continue
        if line.startswith('"'):
            m = CSV_ROW.match(line)
            if m is not None:
                yield m.group(1), m.group(2), m.group(3), _unescape(m.group(4))
                continue
        if line.startswith("| "):
            m = BOX_ROW.match(line)
            if m is not None:
                if row is not None and pending is not None:
                    yield (*row, _cell("\n".join(pending)))
                row, pending = (m.group(1), m.group(2), m.group(3).strip()), [m.group(4)]
                size = len(m.group(4))
                continue
        if VERTICAL_ROW.match(line):
            if row is not None and pending is not None:
                yield (*row, _cell("\n".join(pending)))
            row, pending = None, None
            if vertical:
                yield from _vertical(vertical)
            vertical, last_field = {}, ""
            continue
        f = VERTICAL_FIELD.match(line) if not (row and pending is not None) else None
        if f is not None and (vertical or f.group(1) == "event_time"):
            last_field = f.group(1)
            vertical[last_field] = f.group(2)
            continue
        if last_field == "argument" and len(vertical.get("argument", "")) < MAX_ENTRY:
            vertical["argument"] += "\n" + line  # a statement's own newline, raw
            continue
        if row is not None and pending is not None:
            if line.startswith("+-"):  # the table's closing border
                yield (*row, _cell("\n".join(pending)))
                row, pending = None, None
            elif size < MAX_ENTRY:
                pending.append(line)
                size += len(line) + 1
            continue
        if (
            line.strip()
            and not line.startswith(("+-", BATCH_HEADER))
            and not BOX_HEADER.match(line)
        ):
            unreadable[0] += 1
    if row is not None and pending is not None:
        yield (*row, _cell("\n".join(pending)))
    if vertical:
        yield from _vertical(vertical)


def _cell(text: str) -> str:
    """A table cell's text: the padding and the closing bar of its last line dropped."""
    return re.sub(r"\s*\|\s*$", "", text)


def _vertical(v: dict[str, str]) -> Iterator[tuple[str, str, str, str]]:
    tid, cmd = v.get("thread_id", "").strip(), v.get("command_type", "").strip()
    if tid.isdigit() and cmd:
        yield v.get("event_time", "").strip(), tid, cmd, v.get("argument", "")


def read_general_table(lines: Iterable[str], sink: Sink) -> None:
    unreadable = [0]
    for ts, conn, cmd, arg in rows(lines, unreadable):
        if cmd in _STATEMENT_COMMANDS:
            if arg.strip():
                sink.statement(conn, ts, arg[:MAX_ENTRY])
        elif cmd == "Quit":
            sink.disconnect(conn)
        elif cmd in _NEW_SESSION:
            sink.connect(conn)
    if unreadable[0]:
        sink.unreadable(unreadable[0])
