"""A model of an InnoDB deadlock, rendered as each printer writes it, then damaged the way text
is damaged on its way to a user (docs/deadlock-grammar-innodb.md lists both).

Printers (the functions named are the servers' own):
- `mysql57`: MySQL 5.6/5.7/8.0 < 8.0.18 (lock_deadlock_* / DeadlockChecker::notify): two
  transactions, (1) WAITING, (2) HOLDS + (2) WAITING.
- `mysql80`: MySQL 8.0.18+/8.4/9.x (Deadlock_notifier::notify): n transactions, each with
  HOLDS THE LOCK(S) then WAITING FOR; the held lock may be the transaction's own waiting lock
  (printed again, ending in `waiting`).
- `too_deep`: DeadlockChecker::rollback_print: one unnumbered `*** TRANSACTION:`, its waiting
  lock, and the hard-coded `*** WE ROLL BACK TRANSACTION (2)`.
- `mariadb`: MariaDB 10.6+ Deadlock::report: n transactions, unnumbered WAITING FOR and
  CONFLICTING WITH (every granted lock on the record, the waiting transaction's own included).
Containers: the status section, and the error log of each version (5.6 bare, 5.7 `[Note] InnoDB:`,
8.0 `[Note] [MY-012469] [InnoDB]`, MariaDB `[Note] InnoDB:`), where only the printer's `***`
messages carry the prefix and transaction/lock text is written raw.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, replace

PRINTERS = ("mysql57", "mysql80", "too_deep", "mariadb")
LOGS = ("status", "log56", "log57", "log80", "logmaria")


@dataclass(frozen=True)
class Lock:
    table: str
    db: str = "app"
    index: str | None = "PRIMARY"  # None: a table lock
    mode: str = "X"
    special: str | None = "rec but not gap"  # None: next-key
    insert_intention: bool = False
    space: int = 42
    page: int = 3
    heap: int = 2

    def line(self, trx_id: int | str, waiting: bool) -> str:
        if self.index is None:
            out = f"TABLE LOCK table `{self.db}`.`{self.table}` trx id {trx_id} lock mode {self.mode}"
        else:
            mode = " lock mode S" if self.mode == "S" else f" lock_mode {self.mode}"
            out = (
                f"RECORD LOCKS space id {self.space} page no {self.page} n bits 72 index "
                f"{self.index} of table `{self.db}`.`{self.table}` trx id {trx_id}{mode}"
            )
            if self.special == "gap before rec":
                out += " locks gap before rec"
            elif self.special == "rec but not gap":
                out += " locks rec but not gap"
            if self.insert_intention:
                out += " insert intention"
        return out + (" waiting" if waiting else "")

    def body(self, trx_id: int | str, waiting: bool) -> list[str]:
        out = [self.line(trx_id, waiting)]
        if self.index is not None:
            out += [
                f"Record lock, heap no {self.heap} PHYSICAL RECORD: n_fields 2; compact format; "
                "info bits 0",
                f" 0: len 4; hex 8000{self.heap:04x}; asc     ;;",
                " 1: len 6; hex 000000000b2e; asc      .;;",
            ]
        return out + [""]


@dataclass(frozen=True)
class Trx:
    trx_id: int
    thread_id: int
    query: str
    wait: Lock
    held: tuple[Lock, ...] = ()  # granted locks the others wait for
    user: str = "app"
    host: str = "10.0.0.7"
    ip: str | None = None
    state: str = "updating"
    active: int = 0
    structs: int = 3
    rows: int = 2
    undo: int = 0
    query_id: int = 900
    inside: int | None = None  # ", thread declared inside InnoDB N" (a long header line)

    def header(self, product: str) -> list[str]:
        counts = f"LOCK WAIT {self.structs} lock struct(s), heap size 1136, {self.rows} row lock(s)"
        if self.undo:
            counts += f", undo log entries {self.undo}"
        who = " ".join(x for x in (self.host, self.ip, self.user, self.state) if x)
        return [
            f"TRANSACTION {self.trx_id}, ACTIVE {self.active} sec starting index read"
            + (f", thread declared inside InnoDB {self.inside}" if self.inside else ""),
            "mysql tables in use 1, locked 1",
            counts,
            f"{product} thread id {self.thread_id}, OS thread handle 140387448583936, "
            f"query id {self.query_id} {who}",
            *self.query.split("\n"),
        ]


@dataclass(frozen=True)
class Model:
    printer: str
    trxs: tuple[Trx, ...]
    victim: int  # n of the rolled-back transaction, as printed
    at: str = "2024-05-02 15:58:22"
    own_s: bool = False  # MariaDB: the waiting transaction also holds S on the record
    dup_hold: bool = False  # MySQL 8.0.18+: (1) HOLDS prints its own waiting lock

    def expected_locks(self) -> set[tuple[object, ...]]:
        """(n, waiting, mode, table, index, special, insert_intention) the parser must read."""
        out: set[tuple[object, ...]] = set()

        def add(n: int, lk: Lock, waiting: bool) -> None:
            out.add((n, waiting, lk.mode, lk.table, lk.index, lk.special, lk.insert_intention))

        for n, t in enumerate(self.trxs, 1):
            add(n, t.wait, True)
            if self.printer == "mysql57" and n == 2:
                add(2, t.held[0], False)
            elif self.printer == "mysql80":
                add(n, t.wait if self.dup_hold and n == 1 else t.held[0], False)
            elif self.printer == "mariadb":
                nxt = self.trxs[n % len(self.trxs)]
                add(n % len(self.trxs) + 1, nxt.held[0], False)
                if self.own_s:
                    add(n, replace(t.wait, mode="S"), False)
        return out


def render(m: Model) -> list[tuple[bool, str]]:
    """The report as (is_printer_message, text) lines: a message goes through print(msg) (the
    error log prefixes it), the rest is written raw by trx_print / lock_rec_print."""
    product = "MariaDB" if m.printer == "mariadb" else "MySQL"
    out: list[tuple[bool, str]] = []

    def msg(text: str) -> None:
        out.append((True, text))

    def raw(lines: list[str]) -> None:
        out.extend((False, x) for x in lines)

    t = m.trxs
    if m.printer == "too_deep":
        msg("TOO DEEP OR LONG SEARCH IN THE LOCK TABLE WAITS-FOR GRAPH, WE WILL ROLL BACK "
            "FOLLOWING TRANSACTION ")
        raw([""])
        msg("*** TRANSACTION:")
        raw(t[0].header(product))
        msg("*** WAITING FOR THIS LOCK TO BE GRANTED:")
        raw(t[0].wait.body(t[0].trx_id, True))
        msg("*** WE ROLL BACK TRANSACTION (2)")
        return out
    if m.printer == "mysql57":
        msg("*** (1) TRANSACTION:")
        raw(t[0].header(product))
        msg("*** (1) WAITING FOR THIS LOCK TO BE GRANTED:")
        raw(t[0].wait.body(t[0].trx_id, True))
        msg("*** (2) TRANSACTION:")
        raw(t[1].header(product))
        msg("*** (2) HOLDS THE LOCK(S):")
        raw(t[1].held[0].body(t[1].trx_id, False))
        msg("*** (2) WAITING FOR THIS LOCK TO BE GRANTED:")
        raw(t[1].wait.body(t[1].trx_id, True))
    elif m.printer == "mysql80":
        for n, x in enumerate(t, 1):
            raw([""])
            msg(f"*** ({n}) TRANSACTION:")
            raw(x.header(product))
            raw([""])
            msg(f"*** ({n}) HOLDS THE LOCK(S):")
            if m.dup_hold and n == 1:
                raw(x.wait.body(x.trx_id, True))  # the waiting lock, printed as the blocker
            else:
                raw(x.held[0].body(x.trx_id, False))
            raw([""])
            msg(f"*** ({n}) WAITING FOR THIS LOCK TO BE GRANTED:")
            raw(x.wait.body(x.trx_id, True))
    else:
        for n, x in enumerate(t, 1):
            raw([""])
            msg(f"*** ({n}) TRANSACTION:")
            raw(x.header(product))
            msg("*** WAITING FOR THIS LOCK TO BE GRANTED:")
            raw(x.wait.body(x.trx_id, True))
            msg("*** CONFLICTING WITH:")
            nxt = t[n % len(t)]
            raw(nxt.held[0].body(nxt.trx_id, False))
            if m.own_s:
                raw(replace(x.wait, mode="S").body(x.trx_id, False))
    raw([""])
    msg(f"*** WE ROLL BACK TRANSACTION ({m.victim})")
    return out


def as_status(m: Model) -> list[str]:
    body = [x for _, x in render(m)]
    return [
        "=====================================",
        f"{m.at} 0x7f0c1c773d80 INNODB MONITOR OUTPUT",
        "=====================================",
        "------------------------",
        "LATEST DETECTED DEADLOCK",
        "------------------------",
        f"{m.at} 0x7fae7ee8a700",
        *body,
        "------------",
        "TRANSACTIONS",
        "------------",
        "Trx id counter 99999999",
        "----------------------------",
        "END OF INNODB MONITOR OUTPUT",
        "============================",
    ]


def as_log(m: Model, kind: str) -> list[str]:
    """The error log with innodb_print_all_deadlocks = ON, as each version writes it."""
    day, time = m.at.split(" ")
    iso = f"{day}T{time}.318300Z"
    if kind == "log56":
        head = [f"{m.at} 7f3c2c0d4700 InnoDB: transactions deadlock detected, dumping detailed "
                "information.", f"{m.at} 7f3c2c0d4700"]
        pre = ""
    elif kind == "log57":
        head = [f"{iso} 2245 [Note] InnoDB: Transactions deadlock detected, dumping detailed "
                "information."]
        pre = f"{iso} 2245 [Note] InnoDB: "
    elif kind == "log80":
        head = [f"{iso} 13 [Note] [MY-012468] [InnoDB] Transactions deadlock detected, dumping "
                "detailed information. (lock0lock.cc:6482)"]
        pre = f"{iso} 13 [Note] [MY-012469] [InnoDB] "
    else:
        head = [f"{m.at} 2227 [Note] InnoDB: Transactions deadlock detected, dumping detailed "
                "information."]
        pre = f"{m.at} 2227 [Note] InnoDB: "
    out = [f"{iso} 0 [Note] [MY-010051] [Server] Event Scheduler: scheduler thread started"]
    out += head
    for is_msg, text in render(m):
        if is_msg and pre:
            out.append(pre + text)
            out.append("")  # ib::info ends the message's own newline with another
        else:
            out.append(text)
    out.append(f"{iso} 0 [Note] [MY-010914] [Server] Aborted connection 7 to db: 'app'")
    return out


def render_in(m: Model, container: str) -> list[str]:
    return as_status(m) if container == "status" else as_log(m, container)


# --- what happens to text on its way to a user --------------------------------------------

COMPOSE = "db-1  | "
SYSLOG = "Nov 22 02:01:37 db1 mysqld[812]: "
JOURNAL_ISO = "2024-11-22T02:01:37+0000 db1 mariadbd[812]: "
CRI = "2024-05-02T15:58:22.100758123Z stderr F "


def prefix_lines(lines: list[str], prefix: str) -> list[str]:
    return [prefix + x for x in lines]


def indent(lines: list[str], by: str) -> list[str]:
    return [by + x if x else x for x in lines]


def quote(lines: list[str]) -> list[str]:
    return ["> " + x for x in lines]


def fence(lines: list[str]) -> list[str]:
    return ["Here is the deadlock:", "", "```", *lines, "```", "", "Any idea?"]


def double_blank(lines: list[str]) -> list[str]:
    out: list[str] = []
    for x in lines:
        out += [x, ""]
    return out


def trailing(lines: list[str]) -> list[str]:
    return [x + "  " for x in lines]


def crlf(lines: list[str]) -> list[str]:
    return [x + "\r" for x in lines]


def wrap(lines: list[str], width: int) -> list[str]:
    """Soft wrap at word boundaries, as mail clients and trackers do."""
    out: list[str] = []
    for x in lines:
        if len(x) <= width or not x.strip():
            out.append(x)
        else:
            out += textwrap.wrap(x, width, break_long_words=False, break_on_hyphens=False,
                                 drop_whitespace=True) or [x]
    return out


def lose_header(lines: list[str]) -> list[str]:
    """Drop everything before the report's first line after its header."""
    for i, x in enumerate(lines):
        if "LATEST DETECTED DEADLOCK" in x or "dumping detailed information" in x:
            return lines[i + 1 :]
    return lines


def redact_lock_ids(lines: list[str], m: Model) -> list[str]:
    """An author hides the trx ids of the lock lines (headers keep theirs)."""
    out = []
    for x in lines:
        for t in m.trxs:
            x = x.replace(f"trx id {t.trx_id} ", "trx id XXXX ")
        out.append(x)
    return out


def cut(lines: list[str], at: int) -> list[str]:
    return lines[:at]


def redact_names(lines: list[str], m: Model) -> list[str]:
    """An author hides hosts and users in the thread lines (`xxx`, `***`)."""
    out = []
    for x in lines:
        i = x.find(" query id ")
        if i >= 0 and "thread id" in x:
            head, tail = x[:i], x[i:]
            for t in m.trxs:
                tail = tail.replace(f" {t.host} ", " xxx ", 1).replace(f" {t.user} ", " *** ", 1)
            x = head + tail
        out.append(x)
    return out
