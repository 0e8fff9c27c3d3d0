"""The TRANSACTIONS section of SHOW ENGINE INNODB STATUS: one TrxInfo per session.

A full status lists thousands of sessions and most callers look at a few (the oldest):
headers are parsed at once, each entry's details on first access.
"""

from __future__ import annotations

import re
from typing import Any

from dbwatch.parsers.innodb_common import (
    MAX_LINE,
    MAX_QUERY,
    TRX_HEAD,
    is_record_dump,
    norm_trx_id,
    parse_counts,
    parse_lock_line,
    parse_tables_in_use,
    parse_thread,
    parse_trx_state,
)
from dbwatch.parsers.innodb_deadlock import DeadlockLock, lock_from

from ..frozen import frozen

MAX_TRX_LIST = 100_000
_WAITING = re.compile(r"^------- TRX HAS BEEN WAITING (\d+) (us|SEC|sec) FOR THIS LOCK")
_HLL = re.compile(r"^History list length (\d+)")
_COUNTER = re.compile(r"^Trx id counter (.+)$")
_QUERY_END = (
    "---",
    "Trx ",
    "TABLE LOCK",
    "RECORD LOCKS",
    "Record lock",
    "mysql tables",
    "------- TRX",
)
_TRX_HEADER = "---TRANSACTION"


@frozen
class TrxInfo:
    """One entry of LIST OF TRANSACTIONS FOR EACH SESSION."""

    trx_id: str | None
    state: str | None  # "not started", "starting index read", ...
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
    waiting_lock_line: str | None = None  # parsed on demand: most callers never look

    @property
    def waiting_lock(self) -> DeadlockLock | None:
        lk = parse_lock_line(self.waiting_lock_line) if self.waiting_lock_line else None
        if lk is None:
            return None
        return lock_from(lk, 0, True)

    def __getattr__(self, name: str) -> Any:
        # Reached only for a field missing from __dict__: the details of a list entry
        # that nobody has looked at yet (see parse_transaction_list).
        if name in _DETAILS:
            _load_details(self)
            d = self.__dict__
            if name in d:
                return d[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def to_dict(self) -> dict[str, Any]:
        _load_details(self)
        out = {k: v for k, v in self.__dict__.items() if k != "waiting_lock_line"}
        wl = self.waiting_lock
        out["waiting_lock"] = wl.to_dict() if wl else None
        return out


_HEADER_FIELDS = ("trx_id", "state", "active_seconds")
_DETAIL_DEFAULTS: dict[str, Any] = {
    name: f.default
    for name, f in TrxInfo.__dataclass_fields__.items()
    if name not in _HEADER_FIELDS
}
_DETAILS = frozenset(_DETAIL_DEFAULTS)
for _name in _DETAILS:  # no class-level defaults: a missing detail reaches __getattr__
    delattr(TrxInfo, _name)
_COUNT_KEYS = ("lock_wait", "lock_structs", "row_locks", "undo_entries")  # not heap_size


def parse_transaction_list(
    lines: list[str], a: int, b: int, dashes: list[int] | None = None
) -> tuple[dict[str, Any], tuple[TrxInfo, ...]]:
    """({history_list_length, trx_id_counter}, entries) of lines[a:b]. Each entry keeps
    its own lines until a detail (thread, query, lock counts, …) is first read.
    `dashes`: the indexes of all lines starting with '---', when the caller has them."""
    info: dict[str, Any] = {}
    out: list[TrxInfo] = []
    sub = lines[a:b]
    if dashes is None:
        heads = [k for k, line in enumerate(sub) if line[:14] == _TRX_HEADER]
    else:
        heads = [k - a for k in dashes if a <= k < b and lines[k][:14] == _TRX_HEADER]
    heads.append(len(sub))
    _header_lines(info, sub, 0, heads[0])
    states: dict[str, tuple[int | None, str]] = {}  # header tails repeat ("not started")
    for n in range(len(heads) - 1):
        k, end = heads[n], heads[n + 1]
        m = TRX_HEAD.match(sub[k][:MAX_LINE])
        if m is None:  # not an entry: its lines count as section header lines
            _header_lines(info, sub, k + 1, end)
            continue
        if len(out) >= MAX_TRX_LIST:
            continue
        raw_id, rest = m.groups()
        st = states.get(rest)
        if st is None:
            st = states[rest] = parse_trx_state(rest)
        trx = object.__new__(TrxInfo)
        d = trx.__dict__  # frozen: filled directly, fields in declaration order
        d["trx_id"] = (
            None if raw_id[0] == "(" else (raw_id if " " not in raw_id else norm_trx_id(raw_id))
        )
        d["state"] = st[1] or None
        d["active_seconds"] = st[0]
        d["_lines"] = sub[k + 1 : end]
        out.append(trx)
    return info, tuple(out)


def _header_lines(info: dict[str, Any], lines: list[str], a: int, b: int) -> None:
    for k in range(a, b):
        line = lines[k]
        if line.startswith(("History list length", "Trx id counter")):
            m = _HLL.match(line)
            if m:
                info["history_list_length"] = int(m.group(1))
                continue
            m = _COUNTER.match(line)
            if m:
                info["trx_id_counter"] = norm_trx_id(m.group(1))


def _load_details(trx: TrxInfo) -> None:
    d = trx.__dict__
    lines = d.get("_lines")
    if lines is None:
        return
    details = _details(lines, d["state"] == "not started")
    for name in _DETAIL_DEFAULTS:  # declaration order, as __init__ would set them
        d[name] = details[name]
    d.pop("_lines", None)


def _details(lines: list[str], not_started: bool) -> dict[str, Any]:
    """The detail fields from an entry's lines (after its header), first character first."""
    cur = dict(_DETAIL_DEFAULTS)
    query: list[str] = []
    qlen = 0
    in_query = want_lock = has_thread = False
    for line in lines:
        if not line:
            continue
        c = line[0]
        if c == " " and is_record_dump(line):
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
                for key in _COUNT_KEYS:
                    cur[key] = counts[key]
    cur["query"] = "\n".join(query).strip()[:MAX_QUERY] or None
    return cur
