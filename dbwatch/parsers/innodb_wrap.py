"""Lines of a deadlock report that a soft wrap (mail, trackers, terminals) or its author split off
or elided: the tail of a lock, header or counts line, pieces of the printer's own messages, record
fragments. Read as part of what they continue, never as unparsed text."""

from __future__ import annotations

from typing import Any

from dbwatch.parsers.innodb_common import parse_counts, parse_trx_header

# Pieces of the printer's one-line messages that a soft wrap (mail, trackers) put on a line of
# their own: read as part of the line before, never as unparsed text.
FRAGMENTS = (
    "IN THE LOCK TABLE WAITS-FOR GRAPH",
    "WAITS-FOR GRAPH",
    "GRAPH, WE WILL ROLL BACK",
    "FOLLOWING TRANSACTION",
    "dumping detailed information",
    "detailed information",
    "information.",
    "(lock0lock.cc:",
)
_MARKER_TAILS = ("GRANTED:", "LOCK(S):", "WITH:")
# Words a wrapped lock line continues with.
_LOCK_WORDS = frozenset(
    [
        "locks",
        "rec",
        "but",
        "not",
        "gap",
        "before",
        "insert",
        "intention",
        "waiting",
        "lock_mode",
        "lock",
        "mode",
        "X",
        "S",
        "IX",
        "IS",
        "AUTO-INC",
    ]
)
LOCK_FIRST = frozenset(w[0] for w in _LOCK_WORDS)


def header_tail(f: dict[str, Any], last: str, line: str) -> bool:
    """The rest of a transaction's header or counts line that a soft wrap put on its own line
    ("… thread declared inside InnoDB" / "5000", "… undo log" / "entries 4"): read joined."""
    if line.startswith(("MySQL thread id", "MariaDB thread id", "mysql tables", "LOCK WAIT")):
        return False
    joined = f"{last} {line}"
    if last.startswith(("TRANSACTION", "---TRANSACTION")):
        hd = parse_trx_header(joined)
        if hd is None or hd.trx_id != f.get("trx_id"):
            return False
        f.update(active_seconds=hd.active_seconds, state=hd.state)
    else:
        counts = parse_counts(joined)
        if counts is None or not line[:1].isalnum():
            return False
        f.update(counts)
    f["_last"] = joined
    return True


def continues_lock(line: str) -> bool:
    words = line.split()
    return bool(words) and len(words) <= 12 and all(w in _LOCK_WORDS for w in words)


def is_lock_detail(line: str) -> bool:
    """What the printers put after a lock line besides `Record lock, heap no`: the record's
    fields (' 0: len 4; hex …' / '1: SQL NULL;'), possibly without their leading blank,
    the 'LOCK WAIT ' of a transaction without lock structs, and debug/partition notes."""
    head = line.lstrip()[:14]
    if head[:1].isdigit() and (": len " in head or ": SQL NULL" in head):
        return True
    if line.startswith(("LOCK WAIT", "Record lock, heap no", "holds adaptive hash latch")):
        return True
    # the record header and dump continued on a line of their own by a wrap, or the tail
    # of a `***` marker
    return (
        line.isdigit()
        or (line.endswith(_MARKER_TAILS) and line.isupper() and len(line) < 40)
        or line.endswith((";;", "info bits 0", "compact format;"))
        or "PHYSICAL RECORD" in line
        or "info bits " in line
        or line.startswith(("asc ", "hex ", "(total "))
        or any(f in line for f in FRAGMENTS)
    )
