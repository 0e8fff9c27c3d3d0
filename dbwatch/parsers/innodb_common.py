"""Line-level pieces shared by the InnoDB status and error-log parsers.

Pure and defensive: every function takes one untrusted line and returns None
(or a neutral value) rather than raising on anything it does not recognise.
"""

from __future__ import annotations

import re
from typing import Any

from ..frozen import mutable

MAX_LINE = 16_384  # longer lines are cut before any regex sees them
MAX_QUERY = 16_384  # query text kept per transaction (the server prints <= 3 KB)

# "2018-03-05 13:24:55 0x7f..." (5.6+/MariaDB), "2022-11-25 15:58:22 139815..." (8.0),
# "180305 13:24:55" / "120906  6:03:32" (5.0-5.5). The rest of the line is returned.
_TS = re.compile(
    r"^\s*(?:(\d{4})-(\d{2})-(\d{2})[ T]\s*(\d{1,2}):(\d{2}):(\d{2})"
    r"|(\d{2})(\d{2})(\d{2})\s+(\d{1,2}):(\d{2}):(\d{2}))(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?(.*)$"
)

TRX_HEAD = re.compile(
    r"^(?:---)?TRANSACTION\s+(\d+ \d+|[0-9A-Fa-f]+|\(0x[0-9A-Fa-f]+\))\s*,?\s*(.*)$"
)
# A deadlock section's header also accepts an id its author redacted ("TRANSACTION XXXX, ACTIVE").
_TRX_HEAD = re.compile(
    r"^(?:---)?TRANSACTION\s+(\d+ \d+|[0-9A-Fa-f]+|\(0x[0-9A-Fa-f]+\))\s*,?\s*(.*)$"
    r"|^(?:---)?TRANSACTION\s+([\w*#<>.-]{1,40})\s*,\s*(.*)$"
)
_ACTIVE = re.compile(r"ACTIVE\s+(?:\(PREPARED\)\s+)?(\d+)\s+sec")
_PROCESS = re.compile(r",? ?(?:process no \d+|OS thread id \d+)")
_COUNTS = re.compile(
    r"^(LOCK WAIT\s+)?(\d+) lock struct\(s\), heap size (\d+)"
    r"(?:, (\d+) row lock\(s\))?(?:, undo log entries (\d+))?"
)
_TABLES = re.compile(r"^mysql tables in use (\d+), locked (\d+)")
# The numbers are \S+ so that a report whose author redacted them ("thread id XXX") still reads.
_THREAD = re.compile(
    r"^(?:MySQL|MariaDB) thread id ([^,\s]+),(?: OS thread handle [^,]*,)?\s*query id (\S+)\s?(.*)$"
)
# A trx id a report's author redacted: "XXXX", "xxx", "***", "<trx>", "#id".
REDACTED_ID = re.compile(r"^[\w*#<>.-]{1,40}$")
_IP = re.compile(r"^(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]+)$")
_MODE = re.compile(r"lock[_ ]mode ([A-Z][A-Z-]*)")
# "index `name`" is printed with a blank; hand redaction sometimes eats it ("index`name`").
_REC_HEAD = re.compile(r"^RECORD LOCKS space id (\S+) page no (\S+) n bits \S+ index ?")
_TRX_ID_WORDS = re.compile(r"\strx\s+id\s")


def squeeze(line: str) -> str:
    """Runs of blanks outside backquotes/double quotes become one space (pasted text,
    `index X of   table`); linear, and a no-op for the usual single-spaced line."""
    if "  " not in line and "\t" not in line:
        return line
    out: list[str] = []
    quote = ""
    blank = False
    for ch in line:
        if quote:
            out.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in " \t":
            blank = True
            continue
        if blank and out:
            out.append(" ")
        blank = False
        if ch in '`"':
            quote = ch
        out.append(ch)
    return "".join(out)


def _drop_comments(text: str) -> str:
    """/* ... */ removed by a scan (a lazy regex is quadratic on many unclosed '/*')."""
    out: list[str] = []
    i = 0
    while True:
        j = text.find("/*", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        k = text.find("*/", j + 2)
        if k < 0:
            return "".join(out)
        i = k + 2


def _trx_id_and_rest(tail: str) -> tuple[str, str] | None:
    """'107448 lock_mode X …' or '0 3405 lock_mode X' (two words) -> (id, rest)."""
    toks = tail.split(" ", 3)
    if not toks or not toks[0]:
        return None
    if len(toks) >= 2 and toks[0].isdigit() and toks[1].isdigit():
        return f"{toks[0]} {toks[1]}", " ".join(toks[2:])
    tid = toks[0]
    if tid.strip("0123456789abcdefABCDEF") and not REDACTED_ID.match(tid):
        return None  # neither an id nor a redaction of one
    return tid, " ".join(toks[1:])


def is_record_dump(line: str) -> bool:
    """' 0: len 4; hex 80000001; asc ;;' / ' 1: SQL NULL;' (row contents after a lock)."""
    if not line or line[0] != " ":
        return False
    head = line[:12].lstrip()
    return head[:1].isdigit() and ": " in head


def normalize_ts(text: str) -> tuple[str | None, str]:
    """("YYYY-MM-DD HH:MM:SS", rest of line) from any InnoDB timestamp prefix."""
    m = _TS.match(text[:MAX_LINE])
    if not m:
        return None, text
    g = m.groups()
    if g[0] is not None:
        y, mo, d, h, mi, s = g[0], g[1], g[2], g[3], g[4], g[5]
    else:
        yy = int(g[6])
        y = str(2000 + yy if yy < 70 else 1900 + yy)
        mo, d, h, mi, s = g[7], g[8], g[9], g[10], g[11]
    if not (1 <= int(mo) <= 12 and 1 <= int(d) <= 31 and int(h) < 24):
        return None, text
    return f"{y}-{mo}-{d} {int(h):02d}:{mi}:{s}", g[12] or ""


def norm_trx_id(raw: str) -> str:
    """Old servers print a trx id as two 32-bit words ("0 3793488"): combine them."""
    raw = raw.strip()
    if " " in raw:
        hi, lo = raw.split(None, 1)
        if hi.isdigit() and lo.isdigit():
            return str((int(hi) << 32) + int(lo))
    return raw


@mutable
class TrxHeader:
    trx_id: str | None
    active_seconds: int | None
    state: str


def parse_trx_header(line: str) -> TrxHeader | None:
    """'TRANSACTION 60287, ACTIVE 0 sec updating or deleting' and its variants."""
    m = _TRX_HEAD.match(line[:MAX_LINE])
    if not m:
        return None
    raw_id, rest = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    trx_id = None if raw_id.startswith("(") else norm_trx_id(raw_id)
    active, state = parse_trx_state(rest)
    return TrxHeader(trx_id, active, state)


def parse_trx_state(rest: str) -> tuple[int | None, str]:
    """(active seconds, state) from what follows the transaction id in its header."""
    if rest == "not started":  # most of a busy server's list: keep it cheap
        return None, rest
    am = _ACTIVE.search(rest)
    active = int(am.group(1)) if am else None
    state = rest[am.end() :] if am else rest
    if "process no" in state or "OS thread id" in state:
        state = _PROCESS.sub("", squeeze(state))
    state = state.split(", thread declared inside InnoDB")[0].strip(" ,")
    return active, state


def parse_counts(line: str) -> dict[str, Any] | None:
    """'LOCK WAIT 3 lock struct(s), heap size 1128, 2 row lock(s), undo log entries 1'."""
    m = _COUNTS.match(line)
    if not m:
        return None
    wait, structs, heap, rows, undo = m.groups()
    return {
        "lock_wait": wait is not None,
        "lock_structs": int(structs),
        "heap_size": int(heap),
        "row_locks": int(rows) if rows else None,  # 5.0 omits it
        "undo_entries": int(undo) if undo else 0,
    }  # printed only when non-zero


def parse_tables_in_use(line: str) -> tuple[int, int] | None:
    m = _TABLES.match(line)
    return (int(m.group(1)), int(m.group(2))) if m else None


def parse_thread(line: str) -> dict[str, Any] | None:
    """'MariaDB thread id 96, OS thread handle N, query id 195735 localhost 127.0.0.1 root Updating'.

    After the query id the server prints host, ip, user and state, each only when
    known, separated by spaces; an IP-looking second token is taken as the ip.
    """
    m = _THREAD.match(line[:MAX_LINE])
    if not m:
        return None
    tail = m.group(3)
    who = _WHO.get(tail)
    if who is None:
        if len(_WHO) >= 1024:
            _WHO.clear()
        who = _WHO[tail] = _parse_who(tail)
    host, ip, user, state = who
    thread, query = m.group(1), m.group(2)
    return {
        "thread_id": int(thread) if thread.isdigit() else None,
        "query_id": int(query) if query.isdigit() else None,
        "host": host,
        "ip": ip,
        "user": user,
        "thread_state": state,
    }


_WHO: dict[str, tuple[str | None, str | None, str | None, str | None]] = {}


# Thread states (proc_info) a deadlock report prints after the user, lower case. When a
# report's author removed the host or the user, the state is recognised from the end instead of
# being taken for a user name.
_STATES = frozenset(
    (
        "updating", "update", "sending data", "statistics", "starting", "executing", "init",
        "end", "optimizing", "preparing", "searching rows for update", "sending to client",
        "system lock", "opening tables", "query end", "closing tables", "freeing items",
        "cleaning up", "checking permissions", "creating sort index", "sorting result",
        "copying to tmp table", "removing tmp table", "deleting", "deleting from main table",
        "deleting from reference tables", "updating main table", "updating reference tables",
        "unlocking tables", "locked", "insert", "inserting", "writing to net", "reading from net",
        "logging slow query", "after create", "creating table", "altering table", "rolling back",
        "commit", "starting cleanup", "waiting for handler commit", "fetching rows",
    )
)  # fmt: skip


def _parse_who(tail: str) -> tuple[str | None, str | None, str | None, str | None]:
    """(host, ip, user, state) after the query id; the same few tails repeat per server."""
    toks = tail.split()
    state = None
    for k in range(min(len(toks), 5), 0, -1):  # the longest known state at the end
        said = " ".join(toks[-k:])
        low = said.lower()
        if low in _STATES or low.startswith("waiting for "):
            state, toks = said, toks[:-k]
            break
    toks = [t if t.strip(".…*#xX") else "" for t in toks]  # "...", "xxx": redacted
    host = ip = user = None
    i = 0
    if toks:
        host, i = toks[0], 1
        if len(toks) > 1 and _IP.match(toks[1]):
            ip, i = toks[1], 2
        if i < len(toks):
            user, i = toks[i], i + 1
    rest = " ".join(toks[i:]) or None
    return host or None, ip, user or None, state or rest


def _unquote(ident: str) -> str:
    ident = ident.strip()
    if len(ident) >= 2 and ident[0] == ident[-1] and ident[0] in '`"':
        q = ident[0]
        return ident[1:-1].replace(q + q, q)
    return ident


_SIMPLE_TABLE = re.compile(r'^`([^`/]+)`\.`([^`]+)`$|^"([^"/]+)"\."([^"]+)"$')


def split_table(text: str) -> tuple[str | None, str | None]:
    """`db`.`t`, "db"."t", db.t, `db/t` (5.0) or a lone `t` -> (db, table)."""
    m = _SIMPLE_TABLE.match(text)
    if m:  # the common case, without the quote-aware scan
        return (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    if "/*" in text:
        text = _drop_comments(text)
    text = text.strip()
    parts: list[str] = []
    buf: list[str] = []
    quote = ""
    for ch in text:
        if quote:
            buf.append(ch)
            if ch == quote:
                quote = ""  # a doubled quote re-opens on the next char
        elif ch in '`"':
            quote = ch
            buf.append(ch)
        elif ch == ".":
            parts.append("".join(buf))
            buf = []
        elif ch == " ":
            break  # e.g. a trailing partition note
        else:
            buf.append(ch)
    parts.append("".join(buf))
    names = [_unquote(p) for p in parts if p.strip()]
    if len(names) == 1 and "/" in names[0]:
        names = names[0].split("/", 1)
    if not names:
        return None, None
    if len(names) == 1:
        return None, names[0]
    return names[0], ".".join(names[1:])


def _lock_flags(rest: str) -> dict[str, Any]:
    mm = _MODE.search(rest)
    ii = "insert intention" in rest
    if "rec but not gap" in rest:
        special: str | None = "rec but not gap"
    elif "gap before rec" in rest:
        special = "gap before rec"
    elif ii or "gap" in rest:
        special = "gap"  # an insert-intention lock is always a gap lock
    else:
        special = None  # next-key (record and the gap before it)
    return {
        "mode": mm.group(1) if mm else None,
        "special": special,
        "insert_intention": ii,
        "waiting": rest.rstrip().endswith("waiting"),
    }


def _find_trx_id(line: str, start: int) -> tuple[int, int]:
    """(start, end) of ' trx id ' in a lock line; a blank doubled or a tab by hand editing
    ("trx  id") is found by a linear regex when the plain search fails."""
    c = line.find(" trx id ", start)
    if c >= 0:
        return c, c + 8
    m = _TRX_ID_WORDS.search(line, start)
    return (m.start(), m.end()) if m else (-1, -1)


def parse_lock_line(line: str) -> dict[str, Any] | None:
    """A 'RECORD LOCKS ...' or 'TABLE LOCK ...' line as a dict, else None."""
    line = squeeze(line[:MAX_LINE].strip())
    # Found by str.find, not a regex with two lazy groups (quadratic on hostile names).
    if line.startswith("RECORD LOCKS "):
        m = _REC_HEAD.match(line)
        if not m:
            return None
        a = m.end()
        b = line.find(" of table ", a)
        if b < 0:
            b = line.find("of table ", a)  # "index`name`of table": the blank lost too
            b = b - 1 if b > a else -1
        c, d = _find_trx_id(line, b + 1) if b >= 0 else (-1, -1)
        tail = _trx_id_and_rest(line[d:]) if c >= 0 else None
        if tail is None:
            return None
        db, table = split_table(line[b + 10 : c])
        space, page = m.group(1), m.group(2)
        out = {
            "lock_type": "RECORD",
            "space_id": int(space) if space.isdigit() else None,
            "page_no": int(page) if page.isdigit() else None,
            "index": _unquote(line[a:b]),
            "db": db,
            "table": table,
            "trx_id": norm_trx_id(tail[0]),
        }
        out.update(_lock_flags(tail[1]))
        return out
    if line.startswith("TABLE LOCK table "):
        c, d = _find_trx_id(line, 17)
        tail = _trx_id_and_rest(line[d:]) if c >= 0 else None
        if tail is None:
            return None
        db, table = split_table(line[17:c])
        out = {
            "lock_type": "TABLE",
            "space_id": None,
            "page_no": None,
            "index": None,
            "db": db,
            "table": table,
            "trx_id": norm_trx_id(tail[0]),
        }
        out.update(_lock_flags(tail[1]))
        return out
    return None
