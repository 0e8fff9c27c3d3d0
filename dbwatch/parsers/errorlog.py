"""Find InnoDB deadlock reports in any text: error logs of every MySQL/MariaDB version, status
text, and pastes of either (e-mail quoting, Markdown indentation, CRLF, lost prefixes).

Line by line in constant memory. Every line is cleaned of its paste quoting and its log
prefix (timestamp, thread, `[Note]`, `[MY-012469]`, `[InnoDB]`, `InnoDB:`, syslog) before the
report state machine (innodb_deadlock) sees it. Query text is data: a report that another
report starts inside, or that goes on after its victim line, is marked ambiguous.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from dbwatch.parsers.innodb_common import MAX_LINE, is_record_dump, normalize_ts
from dbwatch.parsers.innodb_deadlock import (
    TOO_DEEP,
    Deadlock,
    _State,
    feed_line,
    finish,
    new_state,
)

MAX_BLOCK_LINES = 50_000  # a real report is a few hundred lines; beyond this, give up on it

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


@dataclass
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
    if (c.isdigit() and line[10:11] == "T") or ("|" in line[:72] and c.isalnum()):
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


@dataclass
class _Block:
    state: _State
    thread: str | None
    start: int  # offset (caller's unit) of the line that opened it
    lines: int = 0


@dataclass
class Scanner:
    """Feed lines (with an offset of the caller's choosing); collect finished deadlocks.

    `safe_offset` is where a restart must resume so that no report is lost or cut.
    """

    lines: int = 0
    recognised: int = 0  # log-prefixed or report lines: "is this a log at all?"
    structured: bool = False  # headers or prefixes seen: bare `*** (1)` no longer opens
    block: _Block | None = None
    out: list[Deadlock] = field(default_factory=list)
    # The last finished report, held until what follows shows it was not cut short by text
    # inside a query: orphan report lines or a suspect next report make it ambiguous too.
    pending: Deadlock | None = None
    rule_seen: bool = False  # a dashed rule inside a report: a section header must follow
    memo: PrefixMemo = field(default_factory=PrefixMemo)
    # The last line was a bare timestamp ("2024-09-27 18:01:00 0x7f86936af700"): the first line
    # the printer writes after the section header. A report pasted without its header starts
    # there, so `*** (1) TRANSACTION:` right after it opens a report even in a prefixed log.
    bare_ts: str | None = None

    @property
    def safe_offset(self) -> int | None:
        return self.block.start if self.block is not None else None

    def _taint(self, why: str) -> None:
        p = self.pending
        if p is not None and not p.ambiguous and p.transactions:
            # What follows came from the last statement's text: the last transaction's header is
            # the printer's, its locks and the victim line may not be.
            last = p.transactions[-1].n
            self.pending = replace(
                p,
                ambiguous=why,
                victim=None,
                victim_source="none",
                transactions=tuple(
                    replace(
                        t, victim=False, blocked_by=None, tables=() if t.n == last else t.tables
                    )
                    for t in p.transactions
                ),
                locks=tuple(lk for lk in p.locks if lk.n != last),
                unverified=(
                    (
                        f"the locks printed for transaction ({last}) and the victim line: the text "
                        "that follows the report shows they may come from its statement"
                    ),
                ),
            )

    def _close(self) -> None:
        blk, self.block = self.block, None
        self.rule_seen = False
        if blk is None:
            return
        dl = finish(blk.state)
        if blk.state.problems:
            self._taint("the next report's structure is broken: " + blk.state.problems[0])
        if dl is None:
            return
        if self.pending is not None:
            self.out.append(self.pending)
        self.pending = dl

    def _open(self, ts: str | None, thread: str | None, offset: int) -> None:
        old = self.block
        # A report is written in one piece, ending with its victim line; one that starts
        # before the previous report's victim line (or inside a suspect report) may come
        # from that report's query text, whatever lines preceded it: both are ambiguous.
        cut = old is not None and (
            bool(old.state.problems) or (not old.state.done and bool(old.state.trxs))
        )
        if old is not None and cut:
            old.state.suspect("another report starts inside it")
        self._close()
        self.block = _Block(new_state(normalize_ts(ts)[0] if ts else None), thread, offset)
        if cut:
            self.block.state.suspect("it starts inside another report, maybe in its query text")

    def feed(self, raw: str, offset: int = 0) -> None:
        self.lines += 1
        blk = self.block
        c = raw[:1]
        if (
            blk is not None
            and not self.rule_seen
            and not self.memo.wrapped
            and c.isalpha()
            and c not in _SLOW_FIRST
            and "eadlock detected" not in raw
            and not raw.startswith("LATEST")
        ):  # the common line inside a report: no prefix, no quoting, not a start
            blk.lines += 1
            if c in "RT" and raw.startswith(("RECORD LOCKS", "TABLE LOCK")):
                self.recognised += 1
            feed_line(blk.state, raw.rstrip())
            if blk.lines > MAX_BLOCK_LINES:
                self._close()
            return
        if c == " " and is_record_dump(raw):
            if self.block is not None:
                self.block.lines += 1
            return  # row contents: most of a report's bytes
        ln = clean(raw, self.memo)
        body = ln.body
        if ln.prefixed:
            self.recognised += 1
            self.structured = True
        if body and _is_dump(body):
            return
        blk = self.block
        if is_start(body) or body == SECTION:
            self.recognised += 1
            self.structured = True
            self._open(ln.ts, ln.thread, offset)
            return
        if ln.prefixed and blk is not None:
            if blk.thread is None and ln.innodb and _is_report_body(body):
                blk.thread = ln.thread  # the header had lost its prefix
            if blk.thread is not None and ln.thread is not None and ln.thread != blk.thread:
                return  # another thread's message interleaved
            if body and not _is_report_body(body):
                self._close()  # another message: the report is over
                return
            if blk.state.at is None and ln.ts:
                blk.state.at = normalize_ts(ln.ts)[0]
        bare_ts = self.bare_ts
        if body:
            self.bare_ts = None
        elif ln.ts and not ln.innodb:
            self.bare_ts = ln.ts
        if (
            body[:3] in ("***", "TOO")
            and (blk is None or blk.state.done)
            and (
                not self.structured
                or bare_ts is not None
                or ln.innodb  # the InnoDB prefix: the printer wrote it, its header was lost
                or body.startswith(TOO_DEEP)
            )
            and (
                body.replace(" ", "").startswith("***(1)TRANSACTION:") or body.startswith(TOO_DEEP)
            )
        ):
            self.recognised += 1  # a bare report pasted without its header
            self._open(bare_ts or ln.ts, None, offset)
            feed_line(self.block.state, body)  # type: ignore[union-attr]
            return
        if blk is None:
            # Every report's tail has `***` lines (its victim line at least); nothing else
            # prints them: one outside a report is the rest of a report cut short by text
            # inside a query.
            if body[:3] == "***":
                self.recognised += 1
                self._taint("report lines follow it outside any report")
            return
        if self.rule_seen and body:  # blank lines (doubled, or wrapped in a prefix) carry nothing
            self.rule_seen = False
            if _SECTION_NAME.match(body):
                self._close()  # the next status section: the report is over
                return
            blk.state.suspect("a dashed rule inside the report")
        if body[:3] == "---" and not body.strip("-"):
            if blk.state.trxs:
                self.rule_seen = True
            return
        blk.lines += 1
        if body.startswith(("***", "RECORD LOCKS", "TABLE LOCK")):
            self.recognised += 1
        feed_line(blk.state, body)
        if blk.lines > MAX_BLOCK_LINES:
            self._close()

    def flush(self, quiet: bool = False) -> list[Deadlock]:
        """Take the finished deadlocks. At the end of input (`quiet`), also the open block
        (a report whose victim line was read is complete even if nothing follows it) and the
        one held for its successor."""
        if quiet:
            if self.block is not None and self.block.state.done:
                self._close()
            if self.pending is not None:
                self.out.append(self.pending)
                self.pending = None
        out, self.out = self.out, []
        return out

    def close(self) -> list[Deadlock]:
        self._close()
        return self.flush(quiet=True)


# Row contents after a lock (' 0: len 4; hex 80000001; asc ;;' / ' 1: SQL NULL;'): most of a
# report's bytes and never structure, dropped from a whole buffer in one linear C-level pass.
_DUMPS = re.compile(rb"\n(?: [0-9]{1,5}: [^\n]*|[ \t\r]*(?=\n))")
_HEADERS = (b"deadlock detected, dumping detailed information", b"LATEST DETECTED DEADLOCK")
CHUNK = 4 * 1024 * 1024


# A lock on many rows lists one 'Record lock, heap no N PHYSICAL RECORD…' line per row (73 of
# a MariaDB report's 90 lines once dumps are gone); the diagnosis uses the first heap number
# of a lock, so only the first line of each run is kept. Each repetition starts with the same
# literal: linear.
_HEAP = b"\nRecord lock, heap no "
_HEAP_RUNS = re.compile(rb"(\nRecord lock, heap no [^\n]*)(?:\nRecord lock, heap no [^\n]*)+")


def slim(data: bytes) -> list[str]:
    """Complete lines of a byte buffer, record dumps and repeated record lines dropped,
    decoded once."""
    data = _DUMPS.sub(b"", b"\n" + data)
    if _HEAP in data:
        data = _HEAP_RUNS.sub(rb"\1", data)
    return data[1:].decode("utf-8", "replace").splitlines()


def open_block_start(data: bytes) -> int:
    """Offset in `data` of the line holding the last report header (0 if none)."""
    k = max(data.rfind(h) for h in _HEADERS)
    return data.rfind(b"\n", 0, k) + 1 if k >= 0 else 0


def iter_deadlocks_bytes(
    chunks: Iterable[bytes], scanner: Scanner | None = None
) -> Iterator[Deadlock]:
    """iter_deadlocks over a byte stream (a file read in big chunks): the fast path."""
    sc = scanner if scanner is not None else Scanner()
    rest = b""
    for chunk in chunks:
        data = rest + chunk
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        for line in slim(data[:cut]):
            sc.feed(line)
            if sc.out:
                yield from sc.flush()
    if rest:
        for line in slim(rest):
            sc.feed(line)
    yield from sc.close()


def iter_deadlocks(lines: Iterable[str], scanner: Scanner | None = None) -> Iterator[Deadlock]:
    """Every deadlock report in the text, in order. Never raises on bad input."""
    sc = scanner if scanner is not None else Scanner()
    feed = sc.feed
    skipped = 0
    for raw in lines:
        if not isinstance(raw, str):
            raw = str(raw)
        c = raw[:1]
        if c == " " and is_record_dump(raw) or c == "\n" or not raw:
            skipped += 1  # row contents and blank lines: most of a report, never structure
            continue
        feed(raw)
        if sc.out:
            yield from sc.flush()
    sc.lines += skipped
    yield from sc.close()
