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
from dataclasses import field, replace
from operator import methodcaller

from dbwatch.parsers.innodb_common import is_record_dump, normalize_ts
from dbwatch.parsers.innodb_deadlock import (
    TOO_DEEP,
    Deadlock,
    feed_line,
    finish,
    new_state,
)
from dbwatch.parsers.innodb_logline import (
    _SECTION_NAME,
    _SLOW_FIRST,
    SECTION,
    Line,
    PrefixMemo,
    _is_dump,
    _is_report_body,
    clean,
    is_start,
    message_state,
)
from dbwatch.parsers.innodb_report import _State

from ..frozen import mutable

__all__ = [
    "CHUNK",
    "SECTION",
    "Line",
    "PrefixMemo",
    "Scanner",
    "clean",
    "is_start",
    "iter_deadlocks",
    "iter_deadlocks_bytes",
    "open_block_start",
    "slim",
    "slim_bytes",
]

MAX_BLOCK_LINES = 50_000  # a real report is a few hundred lines; beyond this, give up on it


@mutable
class _Block:
    state: _State
    thread: str | None
    start: int  # offset (caller's unit) of the line that opened it
    lines: int = 0


@mutable
class Scanner:
    """Feed lines (with an offset of the caller's choosing); collect finished deadlocks."""

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
    # A printer message cut by a soft wrap ("… [InnoDB] *** (1) WAITING FOR THIS LOCK TO BE" /
    # "GRANTED:"): held until the next line completes it or shows it was not cut.
    partial: tuple[Line, int] | None = None

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
            and self.partial is None
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
        if self.partial is not None:  # the rest of a printer message a soft wrap cut
            if not ln.body and not ln.prefixed:
                return  # a blank line between the two halves (blank lines doubled)
            held, at = self.partial
            self.partial = None
            joined = f"{held.body} {ln.body}" if ln.body and not ln.prefixed else ""
            state = message_state(joined) if joined else None
            if state == "partial":
                self.partial = (held._replace(body=joined), at)
                return
            if state == "complete":
                self._feed(held._replace(body=joined), at)
                return
            self._feed(held, at)  # not a continuation: the held line as it was
        elif ln.body and ln.body[0] in "*Tt" and message_state(ln.body) == "partial":
            self.partial = (ln, offset)
            return
        self._feed(ln, offset)

    def _feed(self, ln: Line, offset: int) -> None:
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
        if self.partial is not None:
            held, at = self.partial
            self.partial = None
            self._feed(held, at)
        self._close()
        return self.flush(quiet=True)


# Row contents after a lock (' 0: len 4; hex 80000001; asc ;;' / ' 1: SQL NULL;'): most of a
# report's bytes and never structure, dropped from a whole buffer in one linear C-level pass
# that keeps every other line (a line is dropped iff it is a dump or blank and not the last).
_KEPT = re.compile(rb"\n(?! [0-9]{1,5}: |[ \t\r]*\n)[^\n]*")
_HEADERS = (b"deadlock detected, dumping detailed information", b"LATEST DETECTED DEADLOCK")
CHUNK = 4 * 1024 * 1024


# A lock on many rows lists one 'Record lock, heap no N PHYSICAL RECORD…' line per row (73 of
# a MariaDB report's 90 lines once dumps are gone); the diagnosis uses the first heap number
# of a lock, so only the first line of each run is kept. Each repetition starts with the same
# literal: linear.
_HEAP = b"\nRecord lock, heap no "
_FIRST = methodcaller("group", 1)  # the run's first line (C-level, unlike a "\\1" template)
_HEAP_RUNS = re.compile(rb"(\nRecord lock, heap no [^\n]*)(?:\nRecord lock, heap no [^\n]*)+")


def slim_bytes(data: bytes) -> bytes:
    """A byte buffer without its record dumps, blank lines and repeated record lines."""
    # as if the buffer began with a newline, without copying it (2.4 MB a poll in a storm of
    # 24 KB reports: the copy's fresh pages cost more than the regex)
    k = data.find(b"\n")
    first = _KEPT.match(b"\n" + (data if k < 0 else data[: k + 1]))
    parts = [first.group()] if first else []
    if k >= 0:
        parts += _KEPT.findall(data, k)
    data = b"".join(parts)
    if _HEAP in data:
        data = _HEAP_RUNS.sub(_FIRST, data)
    return data[1:]


def slim(data: bytes) -> list[str]:
    """Complete lines of a byte buffer, record dumps and repeated record lines dropped,
    decoded once."""
    return slim_bytes(data).decode("utf-8", "replace").splitlines()


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
