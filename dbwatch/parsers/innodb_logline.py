"""One error-log line without what it picked up on its way: paste quoting, indentation, per-line
wrappers (syslog, journald, CRI, docker compose) and the server's own log prefix (timestamp, thread,
`[Note]`, `[MY-012469]`, `[InnoDB]`, `InnoDB:`); docs/deadlock-grammar-innodb.md section 3."""

from __future__ import annotations

import re
from typing import NamedTuple

from dbwatch.parsers.innodb_common import MAX_LINE
from dbwatch.parsers.innodb_deadlock import TOO_DEEP

from ..frozen import mutable

# "<ts> <thread> [Level] [MY-012469] [InnoDB] body" (MySQL 8), "<ts> <thread> [Level] InnoDB:"
# (MariaDB, 5.7), "<ts> <hex thread> InnoDB:" (5.6), "120906  6:03:32  InnoDB:" (5.0-5.5).
# Each optional group is tried once: no nested quantifiers, linear on any input.
_PREFIX = re.compile(
    r"^(\d{4}-\d{2}-\d{2}[ T] ?\d{1,2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\d{6} +\d{1,2}:\d{2}:\d{2})"
    r"(?: +(?:0x)?([0-9A-Fa-f]+)(?= |$))?(?: +\[(\w+)\])?(?: +\[(MY-\d+)\])?"
    r"(?: +(\[InnoDB\]|InnoDB:))?"
)
_TAGS = re.compile(r"^(?:\[(\w+)\] *)?(?:\[(MY-\d+)\] *)?(\[InnoDB\]|InnoDB:)")
_SYSLOG = re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]+ [\w.-]+(?:\[\d+\])?:(?: |$)")
# Per-line wrappers a log picks up on its way: docker compose ("db-1  | "), CRI/kubectl
# ("<RFC 3339> stderr F "), journald short-iso ("<ISO> host prog[pid]: "). Each is tried once.
_COMPOSE = re.compile(r"^[\w.-]{1,64} +\| ?")
_ISO = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})"
_CRI = re.compile(_ISO + r" (?:stdout|stderr) [FP](?: |$)")
_JOURNAL_ISO = re.compile(_ISO + r" [\w.-]+ [\w./-]+(?:\[\d+\])?:(?: |$)")
_MONTHS = frozenset(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
)
_START = "deadlock detected, dumping detailed information"
_SLOW_FIRST = frozenset("JFMASONDI")  # month names (syslog) and "InnoDB:" need clean()
_SECTION_NAME = re.compile(r"^[A-Z][A-Z0-9 /_&(),.-]*$")
SECTION = "LATEST DETECTED DEADLOCK"


class Line(NamedTuple):  # a tuple: built for every prefixed line, cheaply
    ts: str | None  # the prefix's timestamp, raw
    thread: str | None
    prefixed: bool  # a log-line prefix was found
    innodb: bool  # the prefix says InnoDB wrote it
    body: str


def _src_suffix(body: str) -> str:
    """MySQL 8 debug builds end a line with ' (lock0lock.cc:6496)'."""
    if body.endswith(")") and ".cc:" in body[-40:]:
        k = body.rfind(" (")
        if k >= 0 and body[k + 2 : -1].split(".cc:")[-1].isdigit():
            return body[:k]
    return body


@mutable
class PrefixMemo:
    """The last log prefix that ended with InnoDB's tag, and its groups: a report's lines
    repeat it, and a line that starts with it matches _PREFIX the same way (every group is
    decided inside the prefix, the tag ends the pattern), so the regex is skipped."""

    text: str = "\0"  # never the start of a line that begins with a digit
    ts: str | None = None
    thread: str | None = None
    wrapped: bool = False  # a per-line wrapper (container, CRI, journald) was seen


def clean(raw: str, memo: PrefixMemo | None = None) -> Line:
    """One raw line without CR/trailing blanks, paste quoting and log prefix."""
    line = raw[:MAX_LINE].rstrip()
    if not line:
        return Line(None, None, False, False, "")
    if line[0] in " \t>":
        line = line.lstrip(" \t>")
        if not line:
            return Line(None, None, False, False, "")
    c = line[0]
    if c in "JFMASOND" and line[:3] in _MONTHS and (m := _SYSLOG.match(line)):
        line = line[m.end() :].lstrip()
        if not line:
            return Line(None, None, True, False, "")
        c = line[0]
    if (c.isdigit() and line[10:11] == "T" and (" std" in line[19:44] or "]:" in line[20:120])) or (
        "|" in line[:72] and c.isalnum()
    ):
        line = _unwrap(line, memo)
        if not line:
            return Line(None, None, True, False, "")
        c = line[0]
    if c.isdigit():
        if memo is not None and line.startswith(memo.text):
            body = _src_suffix(line[len(memo.text) :].lstrip())
            return Line(memo.ts, memo.thread, True, True, body)
        m = _PREFIX.match(line)
        if m:
            body = _src_suffix(line[m.end() :].lstrip())
            innodb = m.group(5) is not None or (m.group(4) or "").startswith("MY-0124")
            if memo is not None and m.group(5) is not None:
                memo.text, memo.ts, memo.thread = line[: m.end()], m.group(1), m.group(2)
            return Line(m.group(1), m.group(2), True, innodb, body)
    elif c == "[" or c == "I":
        m = _TAGS.match(line)
        if m:  # a prefix whose timestamp was lost in the paste
            return Line(None, None, True, True, _src_suffix(line[m.end() :].lstrip()))
    return Line(None, None, False, False, line)


def _unwrap(line: str, memo: PrefixMemo | None) -> str:
    """The line without a container/CRI/journald wrapper (each at most once, in the order
    they are added on the way: container outside, then the collector's)."""
    c = line[0]
    found = False
    if c.isalnum() and "|" in line[:72] and (m := _COMPOSE.match(line)):
        line, found = line[m.end() :], True
        if not line:
            return ""
        c = line[0]
    if c.isdigit() and line[10:11] == "T":
        m = _CRI.match(line) or _JOURNAL_ISO.match(line)
        if m:
            line, found = line[m.end() :], True
    if found:
        if memo is not None:
            memo.wrapped = True
        line = line.lstrip(" \t>")
    return line


def _is_dump(body: str) -> bool:
    """A record dump line seen after its leading blank was stripped ('0: len 4; hex …')."""
    head = body[:14]
    return head[:1].isdigit() and (": len " in head or ": SQL NULL" in head)


def _is_report_body(body: str) -> bool:
    return not body or body.startswith("***") or TOO_DEEP in body


def is_start(body: str) -> bool:
    """The error-log header. The message is unique: its first words are enough when a soft
    wrap put "dumping detailed information." on the next line."""
    if "eadlock detected" not in body:
        return False
    return _START in body or _START in body.lower() or "ransactions deadlock detected," in body


# The printers' own one-line messages (docs/deadlock-grammar-innodb.md), numbers as "(#)": a line
# holding only the start of one was cut by a soft wrap and continues on the next line.
_MESSAGES = (
    "Transactions deadlock detected, dumping detailed information.",
    "transactions deadlock detected, dumping detailed information.",
    (
        "TOO DEEP OR LONG SEARCH IN THE LOCK TABLE WAITS-FOR GRAPH, WE WILL ROLL BACK FOLLOWING "
        "TRANSACTION"
    ),
    "*** (#) TRANSACTION:",
    "*** TRANSACTION:",
    "*** (#) WAITING FOR THIS LOCK TO BE GRANTED:",
    "*** WAITING FOR THIS LOCK TO BE GRANTED:",
    "*** (#) HOLDS THE LOCK(S):",
    "*** CONFLICTING WITH:",
    "*** WE ROLL BACK TRANSACTION (#)",
)
_COMPLETE = frozenset(_MESSAGES)
_NUMBER = re.compile(r"\(\d{1,6}\)")
_OPEN_NUMBER = re.compile(r" \(\d{0,6}$")


def message_state(body: str) -> str | None:
    """ "complete" (a whole printer message), "partial" (the start of one, cut), else None."""
    if len(body) > 120 or not body.startswith(("***", "Transactions", "transactions", "TOO DEEP")):
        return None
    norm = " ".join(body.split()) if "  " in body or "\t" in body else body
    if "(" in norm:
        norm = _NUMBER.sub("(#)", norm)
    if norm in _COMPLETE:  # the usual case: a whole message
        return "complete"
    cut = _OPEN_NUMBER.search(norm)
    if cut:  # a number cut inside its parenthesis: the rest follows
        norm = norm[: cut.start()]
        return "partial" if any(m.startswith(norm + " (#)") for m in _MESSAGES) else None
    if any(m == norm for m in _MESSAGES):
        return "complete"
    if any(m.startswith(norm) and m[len(norm)] == " " for m in _MESSAGES if len(m) > len(norm)):
        return "partial"
    return None
