"""Parse `SHOW ENGINE INNODB STATUS` text into sections, transactions and the latest deadlock.

Pure (no database import). Sections are split line by line on their
`----\\nNAME\\n----` headers, so an empty section (MariaDB 10.6+ SEMAPHORES) never
swallows the next one. Untrusted input: never raises, lengths are bounded.
"""

from __future__ import annotations

import re
from dataclasses import field, replace
from typing import Any

from dbwatch.parsers.innodb_common import normalize_ts
from dbwatch.parsers.innodb_deadlock import (
    Deadlock,
    DeadlockLock,
    DeadlockTrx,
    feed_line,
    finish,
    new_state,
    parse_deadlock_lines,
)
from dbwatch.parsers.innodb_trx import TrxInfo, parse_transaction_list

from ..frozen import frozen

__all__ = [
    "Deadlock",
    "DeadlockLock",
    "DeadlockTrx",
    "FkError",
    "InnodbStatus",
    "TrxInfo",
    "parse_deadlock_lines",
    "parse_status",
]

MAX_TEXT = 4 * 1024 * 1024  # the server caps at 1 MB; anything beyond is not status text
MAX_SECTION_KEEP = 65_536  # raw text kept per section for display

DEADLOCK = "LATEST DETECTED DEADLOCK"
FK_ERROR = "LATEST FOREIGN KEY ERROR"
TRANSACTIONS = "TRANSACTIONS"
END = "END OF INNODB MONITOR OUTPUT"
_NAME = re.compile(r"^[A-Z][A-Z0-9 /_&(),.-]*$")


@frozen
class FkError:
    at: str | None
    text: str


@frozen
class InnodbStatus:
    at: str | None  # the monitor output's own timestamp
    sections: dict[str, str] = field(default_factory=dict)
    deadlock: Deadlock | None = None
    foreign_key_error: FkError | None = None
    history_list_length: int | None = None
    trx_id_counter: str | None = None
    transactions: tuple[TrxInfo, ...] = ()
    truncated: bool = False  # no END OF INNODB MONITOR OUTPUT line

    @property
    def oldest_transaction(self) -> TrxInfo | None:
        """The longest-active transaction: the usual cause of a long history list."""
        active = [t for t in self.transactions if t.active_seconds is not None]
        return max(active, key=lambda t: t.active_seconds or 0) if active else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "sections": sorted(self.sections),
            "deadlock": self.deadlock.to_dict() if self.deadlock else None,
            "foreign_key_error": self.foreign_key_error.__dict__
            if self.foreign_key_error
            else None,
            "history_list_length": self.history_list_length,
            "trx_id_counter": self.trx_id_counter,
            "transactions": [t.to_dict() for t in self.transactions],
            "truncated": self.truncated,
        }


def _is_rule(line: str, char: str) -> bool:
    return len(line) >= 3 and line[0] == char and not line.strip(char)


def dash_lines(lines: list[str]) -> list[int]:
    """Indexes of the lines starting with '---': section rules and transaction headers."""
    return [j for j, line in enumerate(lines) if line[:3] == "---"]


def split_sections(
    lines: list[str], dashes: list[int] | None = None
) -> tuple[dict[str, tuple[int, int]], bool]:
    """{name: (first body line, end line)} and whether the END marker was seen."""
    bounds: dict[str, tuple[int, int]] = {}
    current: str | None = None
    start = 0
    n = len(lines)
    i = 0
    # A header's first line is a rule of '-': only lines starting with "---" can be one.
    for k in dash_lines(lines) if dashes is None else dashes:
        if k < i:
            continue  # inside the header just taken
        if k >= n - 2:
            break
        i = k
        line = lines[i]
        if line[3:4].isalnum():  # '---TRANSACTION …': not a rule, skip the strips
            continue
        if _is_rule(line.rstrip(), "-"):
            name = lines[i + 1].strip()
            close = lines[i + 2].rstrip()
            if (
                name
                and name[0] != "-"
                and _NAME.match(name)
                and (_is_rule(close, "-") or _is_rule(close, "="))
                and abs(len(line.rstrip()) - len(name)) <= 1
            ):
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
            return "\n".join(lines[a : k + 1])[:MAX_SECTION_KEEP]
    return "\n".join(lines[a:b])


def _check_counter(dl: Deadlock, counter: object) -> Deadlock:
    """Every transaction id the server printed is below its trx id counter (ids are handed out
    from it): one that is not did not come from this server's report as printed."""
    top = str(counter or "")
    if not top.isdigit():
        return dl
    beyond = [
        t for t in dl.transactions if t.trx_id and t.trx_id.isdigit() and int(t.trx_id) >= int(top)
    ]
    if not beyond:
        return dl
    said = ", ".join(f"({t.n}) {t.trx_id}" for t in beyond)
    note = (
        f"trx id {said} not below the server's trx id counter {top}: not as the server printed it"
    )
    return replace(dl, inconsistencies=(*dl.inconsistencies, note))


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
    if "\n" not in text[:8192] and "\\n" in text:  # `mysql -e` output: escaped newlines
        text = text.replace("\\n", "\n")
    lines = text.replace("\r\n", "\n").split("\n")
    dashes = dash_lines(lines)
    bounds, complete = split_sections(lines, dashes)
    sections = {name: _section_text(lines, a, b) for name, (a, b) in bounds.items()}
    trx_info: dict[str, Any] = {}
    trxs: tuple[TrxInfo, ...] = ()
    if TRANSACTIONS in bounds:
        a, b = bounds[TRANSACTIONS]
        trx_info, trxs = parse_transaction_list(lines, a, b, dashes)
    deadlock = None
    # The server prints the deadlock section before TRANSACTIONS; one after it can only be
    # text inside a query of the transaction list (forged), so it is not read.
    if DEADLOCK in bounds and (
        TRANSACTIONS not in bounds or bounds[DEADLOCK][0] < bounds[TRANSACTIONS][0]
    ):
        a, b = bounds[DEADLOCK]
        live = frozenset(t.trx_id for t in trxs if t.trx_id) if TRANSACTIONS in bounds else None
        st = new_state()
        for k in range(a, b):
            feed_line(st, lines[k])
        deadlock = finish(st, live)
        if deadlock is not None:
            deadlock = _check_counter(deadlock, trx_info.get("trx_id_counter"))
    fk = None
    if FK_ERROR in bounds:
        body = sections[FK_ERROR].strip()
        fk = FkError(at=normalize_ts(body)[0], text=body) if body else None
    return InnodbStatus(
        at=_monitor_time(lines),
        sections=sections,
        deadlock=deadlock,
        foreign_key_error=fk,
        history_list_length=trx_info.get("history_list_length"),
        trx_id_counter=trx_info.get("trx_id_counter"),
        transactions=trxs,
        truncated=not complete,
    )
