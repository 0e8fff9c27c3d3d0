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
from collections.abc import Iterable, Iterator, Sequence

from dbwatch.sqlpatterns.logs.mysql import STATEMENT_COMMANDS, session_command
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


def looks_like_table(head: Sequence[str]) -> bool:
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
    box: tuple[str, str, str] | None = None  # a table row whose argument cell may go on
    cell: list[str] = []
    size = 0
    vertical: dict[str, str] = {}
    last_field = ""
    for line in lines:
        m = BATCH_ROW.match(line) or (CSV_ROW.match(line) if line.startswith('"') else None)
        if m is not None:  # one line, its newlines escaped
            yield m.group(1), m.group(2), m.group(3), _unescape(m.group(4))
            continue
        m = BOX_ROW.match(line) if line.startswith("| ") else None
        if m is not None or (box is not None and line.startswith("+-")):  # a row, or the end
            if box is not None:
                yield (*box, _cell("\n".join(cell)))
            box = (m.group(1), m.group(2), m.group(3).strip()) if m is not None else None
            cell = [m.group(4)] if m is not None else []
            size = len(cell[0]) if cell else 0
            continue
        if box is not None:  # the argument's own newline, raw in the cell
            if size < MAX_ENTRY:
                cell.append(line)
                size += len(line) + 1
            continue
        if VERTICAL_ROW.match(line):
            yield from _vertical(vertical)
            vertical, last_field = {}, ""
            continue
        f = VERTICAL_FIELD.match(line)
        if f is not None and (vertical or f.group(1) == "event_time"):
            last_field = f.group(1)
            vertical[last_field] = f.group(2)
            continue
        if last_field == "argument" and len(vertical["argument"]) < MAX_ENTRY:
            vertical["argument"] += "\n" + line  # a statement's own newline, raw
            continue
        header = line.startswith(("+-", BATCH_HEADER)) or BOX_HEADER.match(line)
        if line.strip() and not header:
            unreadable[0] += 1
    if box is not None:
        yield (*box, _cell("\n".join(cell)))
    yield from _vertical(vertical)


def _cell(text: str) -> str:
    """A table cell's text: the padding and the closing bar of its last line dropped."""
    return re.sub(r"\s*\|\s*$", "", text)


def _vertical(v: dict[str, str]) -> Iterator[tuple[str, str, str, str]]:
    """The row a vertical listing gave, if it had its thread and command."""
    tid, cmd = v.get("thread_id", "").strip(), v.get("command_type", "").strip()
    if tid.isdigit() and cmd:
        yield v.get("event_time", "").strip(), tid, cmd, v.get("argument", "")


def read_general_table(lines: Iterable[str], sink: Sink) -> None:
    unreadable = [0]
    for ts, conn, cmd, arg in rows(lines, unreadable):
        if cmd in STATEMENT_COMMANDS:
            if arg.strip():
                sink.statement(conn, ts, arg[:MAX_ENTRY])
        else:
            session_command(sink, conn, cmd)
    if unreadable[0]:
        sink.unreadable(unreadable[0])
