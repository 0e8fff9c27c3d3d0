"""PostgreSQL deadlocks from the server log, read by the grammar of DeadLockReport()
(src/backend/storage/lmgr/deadlock.c): `ERROR:  deadlock detected`, a DETAIL of N
`Process P waits for MODE on OBJECT; blocked by process Q.` lines (a cycle: each Q is the next
line's P, the last Q the first P, the first P the process that reports it) then N `Process P: query`
lines in the same order, HINT, CONTEXT, STATEMENT. Messages come from parsers/pglog.py (stderr with
any prefix, csvlog, jsonlog). Grammar and quirks: docs/deadlock-grammar.md. Pure, bounded; never raises.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from dataclasses import field

from dbwatch.parsers.deadlock_model import Deadlock, DeadlockLock, DeadlockTrx
from dbwatch.parsers.pglog import (
    MAX_ENTRY,
    PgRecord,
    StderrReader,
    prefix_fields,
    split_header,
    unescape,
)
from dbwatch.parsers.pglog_records import Counts, detect_format, read_csvlog, read_jsonlog
from dbwatch.parsers.statements import classify

from ..frozen import mutable

__all__ = ["MAX_ENTRY", "PgScanner", "detect_format", "iter_pg_deadlocks", "parse_record"]

MAX_PROCS = 64
MAX_UNPARSED = 20
START = "deadlock detected"
_PIDTOK = r"([0-9]{1,10}|[^\s:;.]{1,16})"  # a pid, or what redaction left of it
_WAITS = re.compile(
    rf"^Process {_PIDTOK} waits for (\S{{1,40}}) on (.{{1,400}}?); blocked by process {_PIDTOK}\.?$"
)
_PROC = re.compile(rf"^Process {_PIDTOK}:(?: (.*))?$", re.DOTALL)
# GetLockmodeName() is never translated: a translated wait line still names its mode
_MODE = re.compile(
    r"\b((?:AccessShare|RowShare|RowExclusive|ShareUpdateExclusive|ShareRowExclusive|Share"
    r"|AccessExclusive|Exclusive)Lock)\b"
)
_INT = re.compile(r"\d{1,10}")
_TPROC = re.compile(r"^\S{1,30} (\d{1,10}) ?[:：] ?(.*)$", re.DOTALL)
_REL = re.compile(r'in relation "([^"]{1,200})"')
# DescribeLockTag() (lmgr.c), 9.x-17
_OBJECTS = (
    ("TUPLE", re.compile(r"^tuple \((\d+),(\d+)\) of relation (\d+) of database (\d+)$")),
    ("TRANSACTION", re.compile(r"^transaction (\S+)$")),
    ("RELATION", re.compile(r"^relation (\d+) of database (\d+)$")),
    ("EXTEND", re.compile(r"^extension of relation (\d+) of database (\d+)$")),
    ("PAGE", re.compile(r"^page (\d+) of relation (\d+) of database (\d+)$")),
    ("VIRTUALXID", re.compile(r"^virtual transaction (\S+)$")),
    ("SPECULATIVE", re.compile(r"^speculative token (\d+) of transaction (\d+)$")),
    ("OBJECT", re.compile(r"^object (\d+) of class (\d+) of database (\d+)$")),
    ("ADVISORY", re.compile(r"^advisory lock \[[\d,]+\]$")),
    ("USERLOCK", re.compile(r"^user lock \[[\d,]+\]$")),
    ("FROZENID", re.compile(r"^pg_database\.datfrozenxid of database (\d+)$")),
    ("APPLY", re.compile(r"^remote transaction (\d+) of subscription (\d+) of database (\d+)$")),
)
# pgstat_get_backend_current_activity(): what stands for a query the server could not show
_NO_QUERY = ("<backend information not available>", "<command string not enabled>",
             "<insufficient privilege>")  # fmt: skip
QUERY_CLIP = 1023  # track_activity_query_size default (1024 bytes with the NUL)


@mutable
class _Wait:
    pid: str
    mode: str
    what: str
    by: str
    line: str


@mutable
class _Detail:
    waits: list[_Wait] = field(default_factory=list)
    queries: list[tuple[str, str]] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)
    incomplete: bool = False


_ITEM = re.compile(r"^\s*Process \S{1,20}(?: waits for |:)")


def _unglue(lines: list[tuple[str, bool]]) -> str:
    """The part's text, rejoining lines cut at a terminal width unless the next one starts a
    grammar item (a line that happened to be exactly that wide)."""
    out: list[str] = []
    for text, glued in lines:
        if glued and out and not _ITEM.match(text):
            out[-1] += text
        else:
            out.append(text)
    return "\n".join(out)


def _read_detail(text: str, english: bool) -> _Detail:
    """The DETAIL by position: waits first, then one query per wait in the same order; a line
    that starts nothing continues the item before it (a wrapped wait, a multi-line query)."""
    d = _Detail()
    pending = ""  # a wait line cut by wrapping, still to be completed
    in_queries = False
    for raw in text.split("\n"):
        line = raw.strip()
        if not line and not in_queries:
            continue
        if not in_queries:
            cand = [f"{pending}{line}", f"{pending} {line}"] if pending else [line]
            w = next((m for c in cand if (m := _wait(c, english))), None)
            if w is not None:
                d.waits.append(w)
                pending = ""
                continue
            q = _proc(line, english)
            if q is not None and d.waits and not pending:
                in_queries = True
                d.queries.append(q)
                continue
            if line.startswith("Process ") or pending:
                pending = (pending + " " + line).strip() if pending else line
                if len(pending) > 600:
                    d.unparsed.append(pending[:300])
                    pending = ""
                continue
            d.unparsed.append(line[:300])
            continue
        q = _proc(line, english)
        n = len(d.queries)
        if q is not None and n < len(d.waits) and _same(q[0], d.waits[n].pid):
            d.queries.append(q)
        elif d.queries:
            pid, sql = d.queries[-1]
            d.queries[-1] = (pid, f"{sql}\n{raw}" if sql else raw.strip())
    if pending:
        d.unparsed.append(pending[:300])
        d.incomplete = True
    return d


def _same(a: str, b: str) -> bool:
    return a == b or not (a.isdigit() and b.isdigit())


def _wait(line: str, english: bool) -> _Wait | None:
    if m := _WAITS.match(line):
        return _Wait(m.group(1), m.group(2), m.group(3), m.group(4), line)
    if english and line.startswith("Process "):
        return None
    mode = _MODE.search(line)
    ints = _INT.findall(line)
    if mode is None or len(ints) < 2 or not line.rstrip("。.").endswith(ints[-1]):
        return None
    if _TPROC.match(line) or ";" not in line[mode.end() :] and "；" not in line:
        return None  # "Word N: query" is a process line, whatever its query says
    what = line[mode.end() :].split(";")[0].split("；")[0].strip(" -")
    return _Wait(ints[0], mode.group(1), what, ints[-1], line)


def _proc(line: str, english: bool) -> tuple[str, str] | None:
    m = _PROC.match(line)
    if m is None and not english:
        m = _TPROC.match(line)
    if m is None:
        return None
    return m.group(1), (m.group(2) or "").strip()


def _object(what: str) -> str:
    for kind, rx in _OBJECTS:
        if rx.match(what):
            return kind
    return "OTHER"


def parse_record(rec: PgRecord) -> Deadlock | None:
    """The deadlock a message reports, or None if it reports none."""
    prefix_fields(rec)
    detail = _unglue(rec.lines_of("DETAIL"))
    # jsonlog keeps the severity in English whatever lc_messages says: the words decide
    english = rec.english and (
        (rec.text("message") or "").lstrip().startswith(START) or detail.lstrip()[:8] == "Process "
    )
    if rec.severity == "DETAIL":  # the ERROR line was lost: the DETAIL is all there is
        detail, english = _unglue(rec.lines_of("message")), True
    d = _read_detail(detail, english)
    if not d.waits and not _is_report(rec):
        return None
    notes = list(d.unparsed[:MAX_UNPARSED])
    pids: list[str] = []
    for w in d.waits:
        pids.extend(p for p in (w.pid, w.by) if p not in pids)
    redacted = not all(p.isdigit() for p in pids)
    if redacted:  # the grammar's order still says who is who: the wait lines are the cycle
        pids = [f"#{i}" for i in range(len(d.waits))]
        for i, w in enumerate(d.waits):
            w.pid, w.by = pids[i], pids[(i + 1) % len(pids)]
        d.queries = [(pids[i], q) for i, (_p, q) in enumerate(d.queries[: len(pids)])]
    if not pids and rec.pid is not None:
        pids = [str(rec.pid)]
    pids = pids[:MAX_PROCS]
    num = {p: i + 1 for i, p in enumerate(pids)}
    closed = bool(d.waits) and d.waits[-1].by == d.waits[0].pid
    chain = all(d.waits[i].by == d.waits[i + 1].pid for i in range(len(d.waits) - 1))
    if d.waits and not (closed and chain):
        notes.append("the waits do not close a cycle: lines are missing or the report was cut")
    if 0 < len(d.queries) < len(d.waits):
        notes.append(f"{len(d.queries)} query line(s) for {len(d.waits)} waits: the report was cut")
    queries = {p: q for p, q in d.queries if p in num}
    victim = pids[0] if pids else None
    if rec.pid is not None and str(rec.pid) in num and str(rec.pid) != victim and not redacted:
        notes.append(f"the log line's process {rec.pid} is not the first waiter {victim}")
        victim = str(rec.pid)
    stmt = (rec.text("STATEMENT") or "").strip()
    if victim is not None and stmt:
        have = queries.get(victim, "").strip()
        if not have or have in _NO_QUERY or (len(have) >= QUERY_CLIP and stmt.startswith(have)):
            queries[victim] = stmt
    if not d.waits:
        notes.append("no DETAIL with the waits (log_error_verbosity = terse, or the text was cut)")
    ctx = _REL.search(rec.text("CONTEXT") or "")
    xid = {w.by: w.what.split(" ", 1)[1] for w in d.waits if w.what.startswith("transaction ")}
    locks: list[DeadlockLock] = []
    tables: dict[str, list[str]] = {p: [] for p in pids}
    for w in d.waits:
        if w.pid not in num:
            continue
        q = queries.get(w.pid)
        table = ctx.group(1) if ctx and w.pid == victim else classify(q).table if q else None
        db, _, tab = table.rpartition(".") if table else ("", "", None)
        if tab:
            tables[w.pid].append(f"{db}.{tab}" if db else tab)
        locks.append(
            DeadlockLock(
                n=num[w.pid],
                waiting=True,
                mode=w.mode,
                db=db or rec.dbname,
                table=tab or None,
                index=None,
                special=w.what,
                insert_intention=False,
                lock_type=_object(w.what) if english else "OTHER",
            )
        )
    by = {w.pid: num.get(w.by) for w in d.waits}
    trxs = tuple(
        DeadlockTrx(
            n=num[p],
            trx_id=None if redacted else xid.get(p),
            thread_id=int(p) if p.isdigit() else None,
            user=None,
            host=None,
            query=_query(queries.get(p)),
            active_seconds=None,
            lock_structs=None,
            row_locks=None,
            undo_entries=None,
            tables=tuple(dict.fromkeys(tables[p])),
            victim=p == victim,
            blocked_by=by.get(p),
        )
        for p in pids
    )
    # the client's copy of the DETAIL has no query lines and goes on with the HINT; the
    # server's always has them, so a DETAIL without them and without a HINT was cut
    cut_queries = not d.queries and "HINT" not in rec.parts
    if cut_queries and d.waits:
        notes.append("no `Process N: query` lines: the report was cut after the waits")
    truncated = d.incomplete or not (closed and chain) or 0 < len(d.queries) < len(d.waits)
    truncated = truncated or (cut_queries and bool(d.waits))
    return Deadlock(
        at=rec.at,
        victim=num.get(victim) if victim is not None else None,
        transactions=trxs,
        locks=tuple(locks),
        truncated=truncated or not d.waits,
        victim_source="printed",
        unparsed=tuple(notes),
    )


def _is_report(rec: PgRecord) -> bool:
    """A deadlock ERROR without its waits (terse verbosity, or cut after the first line)."""
    return rec.severity == "ERROR" and (rec.text("message") or "").lstrip().startswith(START)


def _query(q: str | None) -> str | None:
    q = (q or "").strip()
    if not q or q in _NO_QUERY:
        return None
    return q[:MAX_ENTRY]


def _candidate(rec: PgRecord) -> bool:
    detail = rec.parts.get("DETAIL")
    if detail and _WAITS.match(detail[0][0].strip()):
        return True  # whatever it was attached to (a prefix without %p: the ERROR line lost)
    if rec.english:
        if rec.severity == "ERROR":
            msg = rec.message if len(rec.message) >= len(START) else rec.text("message") or ""
            return msg.lstrip().startswith(START) or rec.sqlstate == "40P01"
        # a DETAIL whose ERROR line was lost (a paste starting at DETAIL, a wrapped header)
        return rec.severity == "DETAIL" and rec.message.lstrip().startswith("Process ")
    prefix_fields(rec)
    return rec.sqlstate == "40P01"  # a translated server: only the SQLSTATE says it


def _severity_split(line: str) -> tuple[str, str, str] | None:
    """(prefix, severity, message) of a stderr line that starts a message (or of the first
    such line inside an escaped one)."""
    for piece in unescape(line):
        if head := split_header(piece):
            return head
    return None


# messages that are never a deadlock report: their bodies (LOG statements) need not be kept
_NOT_REPORTS = frozenset({"LOG", "NOTICE", "INFO", "DEBUG", "DEBUG1", "DEBUG2", "DEBUG3", "DEBUG4",
                          "DEBUG5"})  # fmt: skip


@mutable
class PgScanner:
    """Incremental reader of a stderr log (the tailer feeds it line by line), also used to
    count what iter_pg_deadlocks read."""

    lines: int = 0
    recognised: int = 0
    out: list[Deadlock] = field(default_factory=list)
    reader: StderrReader = field(default_factory=lambda: StderrReader(skip_bodies=_NOT_REPORTS))

    def _take(self, rec: PgRecord | None) -> None:
        if rec is not None and _candidate(rec) and (dl := parse_record(rec)) is not None:
            self.out.append(dl)

    def feed_stderr(self, raw: str) -> None:
        self.lines += 1
        for piece in unescape(raw):
            self._take(self.reader.feed(piece))
        self.recognised = self.reader.headers

    @property
    def waiting_for_detail(self) -> bool:
        """A deadlock ERROR was read and its DETAIL not yet (the server may still be writing)."""
        cur = self.reader.cur
        return cur is not None and _candidate(cur) and "DETAIL" not in cur.parts

    @property
    def open(self) -> bool:
        return self.reader.cur is not None

    def feed_record(self, rec: PgRecord) -> None:
        self.recognised += 1
        self._take(rec)

    def close(self) -> list[Deadlock]:
        self._take(self.reader.close())
        out, self.out = self.out, []
        return out


def iter_pg_deadlocks(lines: Iterable[str], scanner: PgScanner | None = None) -> Iterator[Deadlock]:
    """Every deadlock in a PostgreSQL log of any of the three formats."""
    sc = scanner if scanner is not None else PgScanner()
    it = iter(lines)
    head: list[str] = []
    fmt = "stderr"
    for raw in it:
        head.append(str(raw))
        if str(raw).strip():
            fmt = detect_format(str(raw))
            break
    stream = itertools.chain(head, (str(x) for x in it))
    if fmt in ("csvlog", "jsonlog"):
        counts = Counts()
        reader = read_csvlog if fmt == "csvlog" else read_jsonlog
        try:
            # csvlog and jsonlog always carry the SQLSTATE: only 40P01 records are built
            for rec in reader(stream, counts, "40P01"):
                sc.feed_record(rec)
                yield from sc.close()
        finally:
            sc.lines += counts.lines
        return
    for raw in stream:
        sc.feed_stderr(raw)
        if sc.out:
            out, sc.out = sc.out, []
            yield from out
    yield from sc.close()
