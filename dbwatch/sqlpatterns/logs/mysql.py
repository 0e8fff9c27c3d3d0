"""MySQL/MariaDB general log and slow log readers (line by line, multi-line statements)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from dbwatch.sqlpatterns.logs.sink import MAX_ENTRY, Sink

# `261122  1:52:20\t    11 Query\t…` (MariaDB, MySQL 5.x), `\t\t    11 Query\t…` (same second),
# `2024-01-15T10:00:00.123456Z\t   11 Query\t…` (MySQL 5.7+/8).
# The command is the server's own name for the protocol command (`command_name[]`, sql_parse.cc),
# up to a tab; some are several words ("Init DB": a driver's select_db). Read as a continuation
# line, such an entry of another session was glued onto the statement before it.
# (No name holds a regex metacharacter; the one-word fallback takes names yet to come.)
_COMMANDS = (
    "Sleep|Quit|Init DB|Query|Field List|Create DB|Drop DB|Refresh|Shutdown|Statistics|"
    "Processlist|Connect|Kill|Debug|Ping|Time|Delayed insert|Change user|Binlog Dump|"
    "Table Dump|Connect Out|Register Slave|Register Replica|Prepare|Execute|Long Data|"
    "Close stmt|Reset stmt|Set option|Fetch|Daemon|Binlog Dump GTID|Reset Connection|"
    "Reset connection|clone|Group Replication Data Stream|Bulk_execute|Slave_worker|"
    "Slave_IO|Slave_SQL|Unimpl get tid|Error"
)
_STAMP = (
    r"(\d{6}\s+\d{1,2}:\d\d:\d\d|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
)
GENERAL_ENTRY = re.compile(
    rf"{_STAMP}?\t\s*(\d+) ({_COMMANDS}|[A-Z][A-Za-z_]*)\t(.*)",
    re.DOTALL,
)
# The same log pasted with its tabs turned to spaces (a terminal, a web page, `expand`): only
# the servers' own names, the longest first (a space no longer ends "Binlog Dump" of "… GTID").
# Read so only while no line of the file has the tabs.
SPACED_ENTRY = re.compile(
    rf"(?:{_STAMP} +| *)(\d+) "
    f"({'|'.join(sorted(_COMMANDS.split('|'), key=len, reverse=True))})(?: +(.*)|$)",
    re.DOTALL,
)
VERSION_LINE = re.compile(r".*, Version: (\S+(?: \([^)]*\))?)")
HEADER = re.compile(r"(?:Tcp port: |Time\s+Id\s+Command\s+Argument)")
STATEMENT_COMMANDS = frozenset({"Query", "Execute"})
# A reset (a pool handing the connection on) rolls back and puts autocommit back, as a new session.
_NEW_SESSION = frozenset({"Connect", "Change user", "Reset Connection", "Reset connection"})


def session_command(sink: Sink, conn: str, command: str) -> None:
    """What a command that is not a statement does to the session's transaction."""
    if command == "Quit":
        sink.disconnect(conn)
    elif command in _NEW_SESSION:
        sink.connect(conn)


SLOW_THREAD = re.compile(r"#\s*(?:Thread_id:\s*(\d+)|User@Host:.*?\bId:\s*(\d+))")
SLOW_META = re.compile(r"(?:SET timestamp=\d+(?:\.\d+)?;|use [`\w$]+;)$", re.IGNORECASE)


def read_general(lines: Iterable[str], sink: Sink) -> None:
    """Query/Execute lines are statements (Execute shows the bound values); Prepare is not
    an execution and is skipped; Connect/Quit delimit sessions."""
    match = GENERAL_ENTRY.match
    statement = sink.statement
    # A statement without ';' needs no splitting: straight to the grouper when the sink has one.
    single = getattr(sink, "single_statement", statement)
    # Most entries have no timestamp (same second as the previous one): their head up to
    # the command's tab, once matched by GENERAL_ENTRY, gives (connection, command) again.
    heads: dict[str, tuple[str, str, bool]] = {}
    cur_conn: str | None = None
    cur_cmd = ""
    parts: list[str] = []
    size = 0
    ts: str | None = None
    seen_entry = False
    tabbed = False  # a line had the tabs: no spaced reading for this file
    for line in lines:
        hit = None
        if line[:1] == "\t":
            tab = line.find("\t", 2)
            if tab > 0:
                hit = heads.get(line[:tab])
        if hit is not None:
            if parts:
                text = "\n".join(parts) if len(parts) > 1 else parts[0]
                (statement if ";" in text else single)(cur_conn, ts, text)
            cur_conn, cur_cmd, is_statement = hit
            if is_statement:
                arg = line[tab + 1 :]
                parts = [arg]
                size = len(arg)
                continue
            parts = []
            session_command(sink, cur_conn, cur_cmd)
            continue
        # An entry starts with a timestamp digit or a tab: other lines skip the regex.
        m = match(line) if line[:1] == "\t" or line[:1].isdigit() else None
        if m is not None:
            tabbed = True
        elif not tabbed and line[:1] in " 0123456789":
            m = SPACED_ENTRY.match(line)
        if m is None:
            if cur_conn is not None and cur_cmd in STATEMENT_COMMANDS:
                if size < MAX_ENTRY:  # continuation of a multi-line statement
                    parts.append(line)
                    size += len(line) + 1  # newlines count: empty lines are bounded too
                continue
            if _header(line, sink) or not line:
                continue
            if seen_entry and cur_conn is not None:
                continue  # continuation of an argument we ignore
            sink.unreadable()
            continue
        if cur_conn is not None and parts:
            statement(cur_conn, ts, "\n".join(parts) if len(parts) > 1 else parts[0])
        seen_entry = True
        stamp, cur_conn, cur_cmd, arg = m.groups(default="")
        if stamp:
            ts = stamp
        elif line[:1] == "\t" and m.start(4) == tab + 1:
            if len(heads) >= 4096:
                heads.clear()
            heads[line[:tab]] = (cur_conn, cur_cmd, cur_cmd in STATEMENT_COMMANDS)
        if cur_cmd in STATEMENT_COMMANDS:
            parts = [arg]
            size = len(arg)
        else:
            parts = []
            session_command(sink, cur_conn, cur_cmd)
    if cur_conn is not None and parts:
        statement(cur_conn, ts, "\n".join(parts))


def _header(line: str, sink: Sink) -> bool:
    """Server (re)start header lines: the version is taken, the rest skipped."""
    if ", Version: " in line:
        v = VERSION_LINE.match(line)
        if v is not None:
            sink.version(v.group(1))
            return True
    return HEADER.match(line) is not None


def read_slow(lines: Iterable[str], sink: Sink) -> None:
    """Entries are `# …` header lines, then `SET timestamp=…;`, then the statement up to the
    next `#` line. Works with long_query_time = 0 (every statement logged)."""
    conn: str | None = None
    ts: str | None = None
    parts: list[str] = []
    size = 0
    for line in lines:
        if line.startswith("#"):
            if parts:
                _slow_flush(sink, conn, ts, parts)
                parts, size = [], 0
            if line.startswith("# Time:"):
                ts = line[7:].strip()
            elif line.startswith("# administrator command: "):
                if conn is not None:
                    session_command(sink, conn, line[25:].rstrip().removesuffix(";"))
            elif "Thread_id:" in line or "User@Host:" in line:  # the regex only where it can match
                m = SLOW_THREAD.match(line)
                if m is not None:
                    conn = m.group(1) or m.group(2)
                elif line.startswith("# User@Host:"):
                    conn = line[12:].split("Id:")[0].strip()  # old servers: no thread id
            continue
        if not parts and (not line or SLOW_META.match(line)):
            continue
        if _header(line, sink):
            if parts:
                _slow_flush(sink, conn, ts, parts)
                parts, size = [], 0
            continue
        if conn is None:
            sink.unreadable()
            continue
        if size < MAX_ENTRY:
            parts.append(line)
            size += len(line) + 1  # newlines count: empty lines are bounded too
    if parts:
        _slow_flush(sink, conn, ts, parts)


def _slow_flush(sink: Sink, conn: str | None, ts: str | None, parts: list[str]) -> None:
    text = "\n".join(parts).rstrip()
    text = text.removesuffix(";")
    if conn is not None and text:
        sink.statement(conn, ts, text)
