"""PostgreSQL deadlocks from the server log: `ERROR:  deadlock detected` with its DETAIL
(`Process N waits for MODE on WHAT; blocked by process M.` and `Process N: query`), CONTEXT
and STATEMENT, in stderr (any log_line_prefix), csvlog or jsonlog (PG 15+).

Returns the same Deadlock as the InnoDB parsers: transactions are the processes, locks what
each waits for. Pure, line by line, bounded; never raises.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from dbwatch.parsers.innodb_common import normalize_ts
from dbwatch.parsers.innodb_deadlock import Deadlock, DeadlockLock, DeadlockTrx
from dbwatch.parsers.statements import classify

MAX_ENTRY = 64 * 1024  # text kept per log entry
MAX_PROCS = 64
_SEVERITIES = (
    "ERROR:",
    "DETAIL:",
    "HINT:",
    "CONTEXT:",
    "STATEMENT:",
    "LOG:",
    "WARNING:",
    "FATAL:",
    "NOTICE:",
    "INFO:",
    "PANIC:",
    "DEBUG:",
    "QUERY:",
    "LOCATION:",
)
_WAITS = re.compile(r"^Process (\d+) waits for (\w+) on (.{1,300}?); blocked by process (\d+)\.")
_PROC_Q = re.compile(r"^Process (\d+): ")
_REL = re.compile(r'in relation "([^"]{1,200})"')
_PID = re.compile(r"\[(\d+)\]")
_CSV_HEAD = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?(?: [A-Za-z+\-0-9:]+)?,")
START = "deadlock detected"


@dataclass
class _Entry:
    at: str | None
    pid: int | None
    database: str | None
    detail: list[str] = field(default_factory=list)
    context: str = ""
    statement: str = ""
    size: int = 0


def _build(e: _Entry) -> Deadlock | None:
    waits: list[tuple[int, str, str, int]] = []
    queries: dict[int, str] = {}
    for line in e.detail:
        s = line.strip()
        if m := _WAITS.match(s):
            waits.append((int(m.group(1)), m.group(2), m.group(3), int(m.group(4))))
        elif m := _PROC_Q.match(s):
            queries[int(m.group(1))] = s[m.end() :]
        elif queries:  # a multi-line query continues
            last = next(reversed(queries))
            queries[last] += "\n" + line
    if not waits:
        return None
    pids = list(dict.fromkeys([w[0] for w in waits] + [w[3] for w in waits]))[:MAX_PROCS]
    num = {p: i + 1 for i, p in enumerate(pids)}
    # "waits for ShareLock on transaction X; blocked by process B": X is B's xid
    xid = {b: w.split(" ", 1)[1] for _p, _m, w, b in waits if w.startswith("transaction ")}
    victim_pid = e.pid if e.pid in num else waits[0][0]
    if victim_pid in num and not queries.get(victim_pid) and e.statement:
        queries[victim_pid] = e.statement
    rel = _REL.search(e.context)
    locks = []
    for pid, mode, what, _by in waits:
        if pid not in num:
            continue
        table = rel.group(1) if rel and pid == victim_pid else classify(queries.get(pid)).table
        db, _, tab = (table or "").rpartition(".") if table and "." in table else ("", "", table)
        kind = what.split(" ", 1)[0].upper()
        locks.append(
            DeadlockLock(
                n=num[pid],
                waiting=True,
                mode=mode,
                db=db or e.database,
                table=tab or None,
                index=None,
                special=what,
                insert_intention=False,
                lock_type=kind if kind in ("TRANSACTION", "TUPLE", "RELATION") else "OTHER",
            )
        )
    trxs = tuple(
        DeadlockTrx(
            n=num[p],
            trx_id=xid.get(p),
            thread_id=p,
            user=None,
            host=None,
            query=(queries.get(p) or None),
            active_seconds=None,
            lock_structs=None,
            row_locks=None,
            undo_entries=None,
            tables=tuple(
                dict.fromkeys(
                    f"{lk.db}.{lk.table}" if lk.db else str(lk.table)
                    for lk in locks
                    if lk.n == num[p] and lk.table
                )
            ),
            victim=p == victim_pid,
        )
        for p in pids
    )
    return Deadlock(
        at=e.at,
        victim=num.get(victim_pid),
        transactions=trxs,
        locks=tuple(locks),
        victim_source="printed",
    )


def _severity_split(line: str) -> tuple[str, str, str] | None:
    """(prefix, severity, message) of a stderr line, whatever log_line_prefix is."""
    for sev in _SEVERITIES:
        k = line.find(sev + "  ")
        if k >= 0 and k < 400:
            return line[:k], sev[:-1], line[k + len(sev) + 2 :]
    return None


@dataclass
class PgScanner:
    lines: int = 0
    recognised: int = 0
    out: list[Deadlock] = field(default_factory=list)
    _cur: _Entry | None = None
    _prefix: str = ""
    _field: str = ""

    def _flush(self) -> None:
        if self._cur is not None and (dl := _build(self._cur)) is not None:
            self.out.append(dl)
        self._cur = None

    def feed_stderr(self, raw: str) -> None:
        self.lines += 1
        line = raw[:MAX_ENTRY].rstrip("\r\n")
        parts = _severity_split(line)
        if parts is None:
            if self._cur is not None and line[:1] == "\t":
                self._add(self._field, line[1:])
            return
        self.recognised += 1
        prefix, sev, msg = parts
        if sev == "ERROR" and msg.startswith(START):
            self._flush()
            pid = _PID.search(prefix)
            at = normalize_ts(prefix)[0] if prefix[:1].isdigit() else None
            db = _db_of(prefix)
            self._cur = _Entry(at, int(pid.group(1)) if pid else None, db)
            self._prefix, self._field = prefix, ""
            return
        if (
            self._cur is not None
            and prefix == self._prefix
            and sev
            in (
                "DETAIL",
                "CONTEXT",
                "STATEMENT",
                "HINT",
            )
        ):
            self._field = sev
            self._add(sev, msg)
            return
        if self._cur is not None:
            self._flush()

    def _add(self, sev: str, text: str) -> None:
        e = self._cur
        if e is None or e.size > MAX_ENTRY:
            return
        e.size += len(text)
        if sev == "DETAIL":
            e.detail.append(text)
        elif sev == "CONTEXT":
            e.context += text + "\n"
        elif sev == "STATEMENT":
            e.statement = (e.statement + "\n" + text).strip()

    def feed_record(self, rec: dict[str, object]) -> None:
        """One csvlog/jsonlog record as a dict of the jsonlog field names."""
        self.recognised += 1
        if str(rec.get("message") or "")[: len(START)] != START:
            return
        if rec.get("error_severity") not in (None, "ERROR"):
            return
        pid = rec.get("pid")
        e = _Entry(
            normalize_ts(str(rec.get("timestamp") or ""))[0],
            int(pid) if isinstance(pid, int | str) and str(pid).isdigit() else None,
            str(rec.get("dbname") or "") or None,
        )
        e.detail = str(rec.get("detail") or "")[:MAX_ENTRY].split("\n")
        e.context = str(rec.get("context") or "")[:MAX_ENTRY]
        e.statement = str(rec.get("statement") or "")[:MAX_ENTRY]
        if (dl := _build(e)) is not None:
            self.out.append(dl)

    def close(self) -> list[Deadlock]:
        self._flush()
        out, self.out = self.out, []
        return out


def _db_of(prefix: str) -> str | None:
    """`user@db` (a common %u@%d prefix) or `db=name`, if the prefix has it."""
    for tok in prefix.replace(",", " ").split():
        if tok.startswith("db="):
            return tok[3:] or None
        if "@" in tok and not tok.startswith("@"):
            tail = tok.split("@", 1)[1]
            end = next((i for i, ch in enumerate(tail) if not (ch.isalnum() or ch in "_$-")), None)
            return tail[:end] or None
    return None


# csvlog columns (PG 13-17): the ones read here
_CSV = {
    "timestamp": 0,
    "user": 1,
    "dbname": 2,
    "pid": 3,
    "error_severity": 11,
    "state_code": 12,
    "message": 13,
    "detail": 14,
    "hint": 15,
    "context": 18,
    "statement": 19,
}


def _csv_records(lines: Iterable[str], sc: PgScanner) -> Iterator[dict[str, object]]:
    def counted() -> Iterator[str]:
        for ln in lines:
            sc.lines += 1
            yield ln[:MAX_ENTRY]

    try:
        for row in csv.reader(counted()):
            if len(row) > 19:
                yield {k: row[i] for k, i in _CSV.items()}
    except csv.Error:
        return


def detect_format(first: str) -> str:
    """stderr | csvlog | jsonlog, from one non-empty line."""
    s = first.lstrip()
    if s.startswith("{") and '"timestamp"' in s[:200]:
        return "jsonlog"
    if _CSV_HEAD.match(s):
        return "csvlog"
    return "stderr"


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
    import itertools

    stream = itertools.chain(head, (str(x) for x in it))
    if fmt == "csvlog":
        for rec in _csv_records(stream, sc):
            sc.feed_record(rec)
            yield from sc.close()
    elif fmt == "jsonlog":
        for raw in stream:
            sc.lines += 1
            try:
                rec = json.loads(raw[:MAX_ENTRY])
            except ValueError:
                continue
            if isinstance(rec, dict):
                sc.feed_record(rec)
                yield from sc.close()
    else:
        for raw in stream:
            sc.feed_stderr(raw)
            if sc.out:
                yield from sc.close() if sc._cur is None else _take(sc)
    yield from sc.close()


def _take(sc: PgScanner) -> list[Deadlock]:
    out, sc.out = sc.out, []
    return out
