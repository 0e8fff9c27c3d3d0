"""Parse `SHOW ENGINE INNODB STATUS` text into sections, transactions and the latest deadlock.

Pure (no database import). Sections are split line by line on their
`----\\nNAME\\n----` headers, so an empty section (MariaDB 10.6+ SEMAPHORES) never
swallows the next one. Untrusted input: never raises, lengths are bounded.
"""
from __future__ import annotations

import re
from dataclasses import MISSING, dataclass, field
from typing import Any

from dbwatch.parsers.innodb_common import (
    MAX_LINE,
    MAX_QUERY,
    TRX_HEAD,
    is_record_dump,
    norm_trx_id,
    normalize_ts,
    parse_counts,
    parse_lock_line,
    parse_tables_in_use,
    parse_thread,
    parse_trx_state,
)
from dbwatch.parsers.innodb_deadlock import (
    Deadlock,
    DeadlockLock,
    DeadlockTrx,
    feed_line,
    finish,
    new_state,
    parse_deadlock_lines,
)

__all__ = ["Deadlock", "DeadlockLock", "DeadlockTrx", "FkError", "InnodbStatus", "TrxInfo",
           "parse_deadlock_lines", "parse_status"]

MAX_TEXT = 4 * 1024 * 1024      # the server caps at 1 MB; anything beyond is not status text
MAX_TRX_LIST = 100_000
MAX_SECTION_KEEP = 65_536       # raw text kept per section for display

DEADLOCK = "LATEST DETECTED DEADLOCK"
FK_ERROR = "LATEST FOREIGN KEY ERROR"
TRANSACTIONS = "TRANSACTIONS"
END = "END OF INNODB MONITOR OUTPUT"
_NAME = re.compile(r"^[A-Z][A-Z0-9 /_&(),.-]*$")
_WAITING = re.compile(r"^------- TRX HAS BEEN WAITING (\d+) (us|SEC|sec) FOR THIS LOCK")
_HLL = re.compile(r"^History list length (\d+)")
_COUNTER = re.compile(r"^Trx id counter (.+)$")
_QUERY_END = ("---", "Trx ", "TABLE LOCK", "RECORD LOCKS", "Record lock", "mysql tables",
              "------- TRX")


@dataclass(frozen=True)
class FkError:
    at: str | None
    text: str


@dataclass(frozen=True)
class TrxInfo:
    """One entry of LIST OF TRANSACTIONS FOR EACH SESSION."""
    trx_id: str | None
    state: str | None                  # "not started", "starting index read", ...
    active_seconds: int | None
    thread_id: int | None = None
    query_id: int | None = None
    user: str | None = None
    host: str | None = None
    ip: str | None = None
    thread_state: str | None = None
    query: str | None = None
    lock_structs: int | None = None
    row_locks: int | None = None
    undo_entries: int | None = None
    tables_in_use: int | None = None
    tables_locked: int | None = None
    lock_wait: bool = False
    lock_wait_seconds: float | None = None
    waiting_lock_line: str | None = None      # parsed on demand: most callers never look

    @property
    def waiting_lock(self) -> DeadlockLock | None:
        lk = parse_lock_line(self.waiting_lock_line) if self.waiting_lock_line else None
        if lk is None:
            return None
        return DeadlockLock(
            n=0, waiting=True, mode=lk["mode"], db=lk["db"], table=lk["table"],
            index=lk["index"], special=lk["special"], insert_intention=lk["insert_intention"],
            lock_type=lk["lock_type"], trx_id=lk["trx_id"], space_id=lk["space_id"],
            page_no=lk["page_no"])

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "waiting_lock_line"}
        wl = self.waiting_lock
        out["waiting_lock"] = wl.to_dict() if wl else None
        return out


@dataclass(frozen=True)
class InnodbStatus:
    at: str | None                               # the monitor output's own timestamp
    sections: dict[str, str] = field(default_factory=dict)
    deadlock: Deadlock | None = None
    foreign_key_error: FkError | None = None
    history_list_length: int | None = None
    trx_id_counter: str | None = None
    transactions: tuple[TrxInfo, ...] = ()
    truncated: bool = False                      # no END OF INNODB MONITOR OUTPUT line

    @property
    def oldest_transaction(self) -> TrxInfo | None:
        """The longest-active transaction: the usual cause of a long history list."""
        active = [t for t in self.transactions if t.active_seconds is not None]
        return max(active, key=lambda t: t.active_seconds or 0) if active else None

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at, "sections": sorted(self.sections),
                "deadlock": self.deadlock.to_dict() if self.deadlock else None,
                "foreign_key_error": self.foreign_key_error.__dict__
                if self.foreign_key_error else None,
                "history_list_length": self.history_list_length,
                "trx_id_counter": self.trx_id_counter,
                "transactions": [t.to_dict() for t in self.transactions],
                "truncated": self.truncated}


def _is_rule(line: str, char: str) -> bool:
    return len(line) >= 3 and line[0] == char and not line.strip(char)


def split_sections(lines: list[str]) -> tuple[dict[str, tuple[int, int]], bool]:
    """{name: (first body line, end line)} and whether the END marker was seen."""
    bounds: dict[str, tuple[int, int]] = {}
    current: str | None = None
    start = 0
    n = len(lines)
    i = 0
    # A header's first line is a rule of '-': only lines starting with "---" can be one,
    # found by a comprehension instead of a check per line in Python.
    for k in [j for j, line in enumerate(lines) if line[:3] == "---"]:
        if k < i:
            continue                 # inside the header just taken
        if k >= n - 2:
            break
        i = k
        line = lines[i]
        if _is_rule(line.rstrip(), "-"):
            name = lines[i + 1].strip()
            close = lines[i + 2].rstrip()
            if (name and name[0] != "-" and _NAME.match(name)
                    and (_is_rule(close, "-") or _is_rule(close, "="))
                    and abs(len(line.rstrip()) - len(name)) <= 1):
                if current is not None and current not in bounds:
                    bounds[current] = (start, i)
                if name == END:
                    return bounds, True
                current, start = name, i + 3
                i += 3
    # Some saved copies drop the rule above the END marker; the marker alone suffices.
    end = next((k for k in range(max(start, n - 4), n) if lines[k].strip() == END), None)
    if current is not None and current not in bounds:
        bounds[current] = (start, n if end is None else end)
    return bounds, end is not None


def _section_text(lines: list[str], a: int, b: int) -> str:
    """'\\n'.join(lines[a:b])[:MAX_SECTION_KEEP], joining only the lines that are kept."""
    size = 0
    for k in range(a, b):
        size += len(lines[k]) + 1
        if size > MAX_SECTION_KEEP:
            return "\n".join(lines[a:k + 1])[:MAX_SECTION_KEEP]
    return "\n".join(lines[a:b])


def _monitor_time(lines: list[str]) -> str | None:
    for line in lines[:40]:
        if "INNODB MONITOR OUTPUT" in line and END not in line:
            return normalize_ts(line)[0]
    return None


def parse_status(text: str) -> InnodbStatus:
    """Parse the Status column of SHOW ENGINE INNODB STATUS (or a saved copy of it)."""
    if not isinstance(text, str):
        text = str(text or "")
    text = text[:MAX_TEXT]
    if "\n" not in text[:8192] and "\\n" in text:      # `mysql -e` output: escaped newlines
        text = text.replace("\\n", "\n")
    lines = text.replace("\r\n", "\n").split("\n")
    bounds, complete = split_sections(lines)
    sections = {name: _section_text(lines, a, b) for name, (a, b) in bounds.items()}
    trx_info: dict[str, Any] = {}
    trxs: tuple[TrxInfo, ...] = ()
    if TRANSACTIONS in bounds:
        a, b = bounds[TRANSACTIONS]
        trx_info, trxs = _parse_transactions(lines, a, b)
    deadlock = None
    if DEADLOCK in bounds:
        a, b = bounds[DEADLOCK]
        live = frozenset(t.trx_id for t in trxs if t.trx_id) if TRANSACTIONS in bounds else None
        st = new_state()
        for k in range(a, b):
            feed_line(st, lines[k])
        deadlock = finish(st, live)
    fk = None
    if FK_ERROR in bounds:
        body = sections[FK_ERROR].strip()
        fk = FkError(at=normalize_ts(body)[0], text=body) if body else None
    return InnodbStatus(at=_monitor_time(lines), sections=sections, deadlock=deadlock,
                        foreign_key_error=fk,
                        history_list_length=trx_info.get("history_list_length"),
                        trx_id_counter=trx_info.get("trx_id_counter"), transactions=trxs,
                        truncated=not complete)


def _parse_transactions(lines: list[str], a: int, b: int
                        ) -> tuple[dict[str, Any], tuple[TrxInfo, ...]]:
    """One pass with cheap first-character checks; per transaction only its fields dict
    (TrxInfo order) and a few flags. The regexes run once per transaction, not per line."""
    info: dict[str, Any] = {}
    out: list[TrxInfo] = []
    states: dict[str, tuple[int | None, str]] = {}   # header tails repeat ("not started")
    cur: dict[str, Any] | None = None
    query: list[str] = []
    qlen = 0
    in_query = want_lock = has_thread = not_started = False
    for line in lines[a:b]:
        if not line:
            continue
        c = line[0]
        if c == " " and is_record_dump(line):
            continue
        if c == "-" and line.startswith("---TRANSACTION"):
            if cur is not None and len(out) < MAX_TRX_LIST:
                out.append(_trx_info(cur, query))
            m = TRX_HEAD.match(line[:MAX_LINE])
            if m is None:
                cur = None
                continue
            raw_id, rest = m.groups()
            st = states.get(rest)
            if st is None:
                st = states[rest] = parse_trx_state(rest)
            cur = dict(_TRX_TEMPLATE)
            cur["trx_id"] = None if raw_id[0] == "(" else (
                raw_id if " " not in raw_id else norm_trx_id(raw_id))
            cur["active_seconds"] = st[0]
            cur["state"] = st[1] or None
            query, qlen = [], 0
            in_query = want_lock = has_thread = False
            not_started = st[1] == "not started"
            continue
        if cur is None:
            _header_line(info, line)
            continue
        if len(line) > MAX_LINE:
            line = line[:MAX_LINE]
        if c == "R" and line.startswith("Record lock"):
            continue
        if in_query:
            if not line.startswith(_QUERY_END):
                if qlen < MAX_QUERY:
                    query.append(line)
                    qlen += len(line) + 1
                continue
            in_query = False
        if c == "-":
            if line.startswith("------- TRX HAS BEEN WAITING"):
                w = _WAITING.match(line)
                if w:
                    secs = int(w.group(1))
                    cur["lock_wait_seconds"] = secs / 1e6 if w.group(2) == "us" else float(secs)
                want_lock = True
            continue
        if c == "R" or c == "T":
            if want_lock and line.startswith(("RECORD LOCKS", "TABLE LOCK")):
                cur["waiting_lock_line"] = line
            want_lock = False
            continue
        if has_thread or (c == "0" and not_started):
            continue
        if c == "m":
            tu = parse_tables_in_use(line)
            if tu:
                cur["tables_in_use"], cur["tables_locked"] = tu
        elif c == "M":
            th = parse_thread(line)
            if th:
                cur.update(th)
                has_thread = in_query = True
        elif c == "L" or c.isdigit():
            counts = parse_counts(line)
            if counts:
                for k in _COUNT_KEYS:
                    cur[k] = counts[k]
    if cur is not None and len(out) < MAX_TRX_LIST:
        out.append(_trx_info(cur, query))
    return info, tuple(out)


def _header_line(info: dict[str, Any], line: str) -> None:
    m = _HLL.match(line)
    if m:
        info["history_list_length"] = int(m.group(1))
        return
    m = _COUNTER.match(line)
    if m:
        info["trx_id_counter"] = norm_trx_id(m.group(1))


_TRX_TEMPLATE: dict[str, Any] = {
    name: (None if f.default is MISSING else f.default)
    for name, f in TrxInfo.__dataclass_fields__.items()}
_COUNT_KEYS = ("lock_wait", "lock_structs", "row_locks", "undo_entries")   # not heap_size


def _trx_info(cur: dict[str, Any], query: list[str]) -> TrxInfo:
    cur["query"] = "\n".join(query).strip()[:MAX_QUERY] or None
    # Every field is in `cur`, in declaration order: fill the frozen instance directly
    # (its generated __init__ costs a setattr per field, thousands of times per status).
    trx = object.__new__(TrxInfo)
    trx.__dict__.update(cur)
    return trx
