"""The one reader of PostgreSQL server log lines: stderr with any log_line_prefix, csvlog and
jsonlog, and the wrappings the text picks up on its way to a reader (container/syslog/journald
prefixes, Markdown quoting, CRLF, indentation). Yields whole messages; grammar in docs/deadlock-grammar.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ..frozen import mutable

MAX_ENTRY = 64 * 1024  # text kept per message part
MAX_PREFIX = 400  # a log_line_prefix longer than this is not looked into
# elog.c error_severity(); the secondary parts follow their message in this order
PRIMARY = frozenset(
    [
        "LOG",
        "ERROR",
        "FATAL",
        "PANIC",
        "WARNING",
        "NOTICE",
        "INFO",
        "DEBUG",
        "DEBUG1",
        "DEBUG2",
        "DEBUG3",
        "DEBUG4",
        "DEBUG5",
    ]
)
SECONDARY = ("DETAIL", "HINT", "QUERY", "CONTEXT", "LOCATION", "STATEMENT")
SEVERITIES = PRIMARY | frozenset(SECONDARY)
# "WORD:  " (elog.c prints two spaces); one space is accepted for the English words a tracker
# or a chat squeezed, any upper-case word with two spaces is a translated severity
_HEAD = re.compile(r"(?:(?<=[\s:\]>)])|^)([^\W\d_]{2,12}\d?):(?:  | (?=\S)|$)")
_TS = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)")
_PID = re.compile(r"[\[<](\d{1,9})(?:-\d+)?[\]>]|\bpid[=:] ?(\d{1,9})")
_USERDB = re.compile(r"(?:^|[\s:\[(,])([\w$.\[\]-]{1,63})@([\w$.\[\]-]{1,63})")
_KEYED = re.compile(r"\b(user|db|database|app|application)=([^\s,]{1,63})")
_SESSION = re.compile(r"(?<![\w.])([0-9a-f]{6,8}\.[0-9a-f]{1,8})(?![\w.])")
_SQLSTATE = re.compile(r"(?<![\w.])(40P01)(?![\w.])")
# per-line wrappers, outermost first
_QUOTE = re.compile(r"^[ \t]{0,3}(?:> ?)+")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_COMPOSE = re.compile(r"^[A-Za-z0-9][\w.-]{0,62}\s+\| ?")
_KUBE = re.compile(r"^\[pod/[^\]]{1,200}\] ")
_RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d) ")
_SYSLOG = re.compile(
    r"^(?:<\d{1,3}>\d? ?)?(?:[A-Z][a-z]{2} [ \d]?\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\S{8,32})"
    r" \S{1,255} [^\s:\[]{1,64}(?:\[(\d{1,9})\])?: (?:\[\d{1,12}-(\d{1,6})\] ?)?"
)
_WRAPPED = re.compile(
    r"^ {1,12}(?:>|```|~~~|\d{4}-\d\d-\d\dT|[A-Z][a-z]{2} [ \d]\d |[A-Za-z0-9][\w.-]*\s+\| )"
)
_SYSLOG_START = frozenset("<ADFJMNOS")  # a priority, or a month's initial
WRAP_WIDTHS = frozenset({72, 76, 80, 100, 120, 132})


@dataclass(slots=True)
class PgRecord:
    """One server message: the primary line and its DETAIL/HINT/CONTEXT/STATEMENT parts."""

    severity: str  # as printed (translated servers print their own words)
    message: str
    prefix: str = ""
    line: int = 0  # 1-based line of the message's first line
    pid: int | None = None
    at: str | None = None  # "YYYY-MM-DD HH:MM:SS"
    user: str | None = None
    dbname: str | None = None
    session: str | None = None
    sqlstate: str | None = None
    # part -> its lines, each with "glued": the line before it was cut at a wrap width
    parts: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)
    size: int = 0
    filled: bool = False  # prefix_fields() done (csvlog/jsonlog records come filled)

    @property
    def english(self) -> bool:
        return self.severity in SEVERITIES

    def text(self, part: str) -> str | None:
        lines = self.parts.get(part)
        if lines is None:
            return None
        out: list[str] = []
        for text, glued in lines:
            if glued and out:
                out[-1] += text
            else:
                out.append(text)
        return "\n".join(out)

    def lines_of(self, part: str) -> list[tuple[str, bool]]:
        return self.parts.get(part, [])

    def add(self, part: str, text: str, glued: bool = False) -> None:
        if self.size > MAX_ENTRY:
            return
        self.size += len(text) + 1  # newlines count: empty lines are bounded too
        self.parts.setdefault(part, []).append((text[:MAX_ENTRY], glued))


def split_header(line: str) -> tuple[str, str, str] | None:
    """(prefix, severity, message) of a line that starts a message, whatever log_line_prefix
    printed before the severity; None for a continuation line."""
    if line[:1] == "\t":
        return None
    k = line.find(":  ", 0, MAX_PREFIX + 16)
    if k > 0:  # the common case, as elog.c prints it: no regex
        j = k
        while j > 0 and line[j - 1].isalnum():
            j -= 1
        word, prefix = line[j:k], line[:j]
        if (
            (word in SEVERITIES or (word.isupper() and word.isalpha()))
            and (j == 0 or line[j - 1] in " :]>)\t")
            and line[k + 3 : k + 4] != " "
            and "'" not in prefix
            and '"' not in prefix
        ):
            return prefix, word, line[k + 3 :]
    elif ":" not in line[: MAX_PREFIX + 16]:
        return None
    m = _HEAD.search(line, 0, MAX_PREFIX + 16)
    while m is not None:
        word = m.group(1)
        two = line[m.end(1) : m.end(1) + 3] == ":  " and line[m.end(1) + 3 : m.end(1) + 4] != " "
        if word in SEVERITIES or (two and word.isupper()):
            prefix = line[: m.start(1)]
            if "'" not in prefix and '"' not in prefix and len(prefix) <= MAX_PREFIX:
                return prefix, word, line[m.end() :]
            return None
        m = _HEAD.search(line, m.end(1), MAX_PREFIX + 16)
    return None


_BARE = re.compile(r"(?<![\w.:/+-])(\d{2,9})(?![\w.:/-])")


def pid_of(prefix: str, outer_pid: int | None = None) -> int | None:
    """%p: `[pid]`, `[pid-line]`, `<pid>`, `pid=N`; else a bare number outside the timestamp
    (`%m %p `); else the syslog/journald program's [pid]."""
    if m := _PID.search(prefix):
        return int(m.group(1) or m.group(2))
    if outer_pid is not None:
        return outer_pid
    if b := _BARE.search(_TS.sub(" ", prefix)):
        return int(b.group(1))
    return None


def session_of(prefix: str) -> str | None:
    """%c, the session id (`hex(start).hex(pid)`), if the prefix has it."""
    if "." not in prefix:
        return None
    s = _SESSION.search(prefix)
    return s.group(1) if s else None


def prefix_fields(rec: PgRecord) -> None:
    """Fill what a log_line_prefix may carry: %m/%t, %u@%d, %c, %e (only 40P01 is looked for);
    the pid is read when the line is (it groups the lines of a message). Done on demand."""
    if rec.filled:
        return
    rec.filled = True
    p = rec.prefix
    if t := _TS.search(p):
        rec.at = f"{t.group(1)} {t.group(2)}"
    if u := _USERDB.search(p):
        user, db = u.group(1), u.group(2)
        rec.user = None if user == "[unknown]" else user
        rec.dbname = None if db == "[unknown]" else db
    for key, val in _KEYED.findall(p):
        if key == "user":
            rec.user = val
        elif key in ("db", "database"):
            rec.dbname = val
    if s := _SESSION.search(p):
        rec.session = s.group(1)
    if _SQLSTATE.search(p):
        rec.sqlstate = "40P01"


@mutable
class Unwrap:
    """Takes off the per-line wrappers (Markdown quote, container, kubectl, syslog/journald)."""

    fence: int = 0  # code-fence lines dropped
    outer_pid: int | None = None  # syslog's program[pid]
    syslog_chunk: int | None = None  # syslog_sequence_numbers: [seq-chunk]

    def __call__(self, raw: str) -> str | None:
        line = raw.rstrip("\r\n")
        if "\r" in line:
            line = line.replace("\r", "")
        for _ in range(4):  # wrappers nest in any order (kubectl inside compose, > outside)
            before = line
            if line[:1] == " " and _WRAPPED.match(line):  # a paste indented as a whole
                line = line.lstrip(" ")
            if line[:1] in (">", " ") and (q := _QUOTE.match(line)):
                line = line[q.end() :]
            if ("`" in line[:8] or "~" in line[:8]) and _FENCE.match(line):
                self.fence += 1
                return None
            if "|" in line[:80] and (m := _COMPOSE.match(line)):
                line = line[m.end() :]
            if line[:5] == "[pod/" and (m := _KUBE.match(line)):
                line = line[m.end() :]
            if line[10:11] == "T" and (m := _RFC3339.match(line)) and not _looks_pg_ts(line, m):
                line = line[m.end() :]
            if line is before or line == before:
                break
        self.syslog_chunk = self.outer_pid = None
        if (line[:1] in _SYSLOG_START or line[10:11] == "T") and (m := _SYSLOG.match(line)):
            line = line[m.end() :]
            self.outer_pid = int(m.group(1)) if m.group(1) else None
            self.syslog_chunk = int(m.group(2)) if m.group(2) else None
            if line.startswith("#011"):  # rsyslog's escape of the continuation tab
                line = "\t" + line[4:]
        return line


_ANSI = re.compile(r"(?:\x1b|\^\[)\[[0-9;]{0,20}m")
_ESCAPED = re.compile(r"\\n(?=(?:DETAIL|HINT|CONTEXT|STATEMENT):  |Process \S{1,20} waits for )")


def unescape(raw: str) -> list[str]:
    """A report that went through an exception's repr (`DeadlockDetected('deadlock
    detected\\nDETAIL:  Process …')`) or a terminal's colours: its lines again."""
    if "[" in raw and ("\x1b" in raw or "^[" in raw):
        raw = _ANSI.sub("", raw)
    if "\\n" not in raw or not _ESCAPED.search(raw):
        return [raw]
    return raw.rstrip("\r\n").replace("\\t", "\t").split("\\n")


def _looks_pg_ts(line: str, m: re.Match[str]) -> bool:
    """An RFC 3339 stamp followed by a severity is PostgreSQL's own prefix, not a shipper's."""
    rest = line[m.end() :]
    h = split_header(rest)
    return h is not None and h[0].strip() == "" and not _TS.match(rest)


@mutable
class StderrReader:
    """Line by line: `feed` returns the messages a line completes; `close` the last one."""

    unwrap: Unwrap = field(default_factory=Unwrap)
    lines: int = 0
    headers: int = 0  # lines that started a message
    loose: int = 0  # continuation lines without the tab PostgreSQL puts there
    orphan: int = 0  # lines before any message, or after a message's end (none of its parts)
    indent: str | None = None  # a paste's indentation, learnt from its first header
    cur: PgRecord | None = None
    # severities whose message text is not kept beyond its first line (the deadlock scanner
    # needs no LOG statement's body; their DETAIL etc. are still kept)
    skip_bodies: frozenset[str] = frozenset()
    _part: str = ""
    _skip: bool = False
    _last_width: int = 0
    _piece: str | None = None  # the last line, if cut at a wrap width (maybe a header's start)
    _piece_added: bool = False
    _typical: int = -1  # the length of the last header's prefix

    def feed(self, raw: str) -> PgRecord | None:
        self.lines += 1
        if raw[:1] == "\t" and self._part:  # PostgreSQL's own continuation line: the hot path
            self._piece = None
            if not self._skip and self.cur is not None:
                text = raw[1 : MAX_ENTRY * 2].rstrip("\r\n")
                self._last_width = len(text) + 1
                self.cur.add(self._part, text)
            return None
        raw = raw[: MAX_ENTRY * 2].rstrip("\r\n")
        c = raw[:1]
        if (c == "\t" or (c.isdigit() and raw[10:11] != "T")) and "|" not in raw[:80]:
            line: str | None = raw  # a plain server line: no wrapper to take off
            self.unwrap.outer_pid = self.unwrap.syslog_chunk = None
        else:
            line = self.unwrap(raw)
        if line is None:
            return None
        width = len(raw) if len(raw) in WRAP_WIDTHS else len(line)
        if self.indent and line.startswith(self.indent):
            line = line[len(self.indent) :]
        if self._piece is not None:
            line = self._rejoin(self._piece, line)
        head = split_header(line)
        if head is None:
            # a line cut at a terminal's width goes on without a newline; PostgreSQL's own
            # continuation lines start with a tab
            glued = self._last_width in WRAP_WIDTHS and line[:1] != "\t"
            self._last_width = width
            self._piece, self._piece_added = (line if width in WRAP_WIDTHS else None), False
            if self.cur is None or not self._part:
                self.orphan += 1 if line.strip() else 0
            elif not self._skip:
                text = line[1:] if line[:1] == "\t" else line
                if text[:1] != "\t" and line[:1] != "\t" and text:
                    self.loose += 1
                self.cur.add(self._part, text, glued and bool(text))
                self._piece_added = True
            return None
        self._last_width = width
        self._piece = None
        self.headers += 1
        prefix, sev, msg = head
        if self.indent is None:
            self.indent = prefix[: len(prefix) - len(prefix.lstrip())]
            prefix = prefix.lstrip()
        self._typical = len(prefix)
        done: PgRecord | None = None
        cur = self.cur
        if cur is not None and self._secondary(cur, prefix, sev):
            self._part = sev if sev in SECONDARY else _guess_part(cur, msg)
            self._skip = False
            cur.add(self._part, msg)
            return None
        done = cur
        rec = PgRecord(sev, msg[:MAX_ENTRY], prefix, self.lines)
        rec.add("message", msg)
        rec.pid = pid_of(prefix, self.unwrap.outer_pid)
        self.cur, self._part = rec, "message"
        self._skip = sev in self.skip_bodies
        return done

    def _rejoin(self, piece: str, line: str) -> str:
        """A message's first line cut at a terminal's width before its severity: the piece
        already read (taken back from where it went) and this line are one header, when the
        joined prefix is as long as the log's prefixes are and this line's alone is not."""
        self._piece = None
        joined = split_header(piece + line)
        if joined is None:
            return line
        alone = split_header(line)
        t = self._typical
        # a piece nothing claimed (the log's first line) joins; else the prefixes' length decides
        if (
            alone is not None
            and self._piece_added
            and not (t >= 0 and abs(len(joined[0]) - t) <= 8 < abs(len(alone[0]) - t))
        ):
            return line
        cur = self.cur
        if self._piece_added and cur is not None and cur.parts.get(self._part):
            cur.parts[self._part].pop()
        return piece + line

    def _secondary(self, cur: PgRecord, prefix: str, sev: str) -> bool:
        """A DETAIL/HINT/... line belongs to the open message when it came from the same
        process (the prefix may differ in %l, the line number)."""
        if sev in PRIMARY or sev == cur.severity:
            return False
        if sev not in SECONDARY and cur.english:
            return False  # a translated word after an English message: a new message
        pid = pid_of(prefix, self.unwrap.outer_pid)
        return pid is None or cur.pid is None or pid == cur.pid

    def close(self) -> PgRecord | None:
        cur, self.cur, self._part, self._skip = self.cur, None, "", False
        return cur

    def read(self, lines: Iterable[str]) -> Iterator[PgRecord]:
        for raw in lines:
            for piece in unescape(raw):
                rec = self.feed(piece)
                if rec is not None:
                    yield rec
        last = self.close()
        if last is not None:
            yield last


def _guess_part(cur: PgRecord, msg: str) -> str:
    """A translated server's secondary parts, by elog.c's fixed order: DETAIL, HINT, then
    CONTEXT (`... (n,n) ... "relation"`), LOCATION (`function, file.c:n`), STATEMENT last."""
    if "DETAIL" not in cur.parts:
        return "DETAIL"
    if "HINT" not in cur.parts:
        return "HINT"
    if re.search(r"\w+, \w+\.c:\d+$", msg):
        return "LOCATION"
    if "CONTEXT" not in cur.parts and re.search(r'\(\d+,\d+\).*"', msg):
        return "CONTEXT"
    return "STATEMENT"
