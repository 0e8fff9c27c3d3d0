"""A PostgreSQL deadlock as a model, rendered the way the server prints it (DeadLockReport in
deadlock.c, elog.c's log_line_prefix / csvlog / jsonlog), then mangled the ways log text is
on its way to a reader. Used by tests/test_pg_deadlock_generated.py; see docs/deadlock-grammar.md."""

from __future__ import annotations

import csv
import io
import json
import random
from dataclasses import dataclass, field

MODES = (
    "AccessShareLock", "RowShareLock", "RowExclusiveLock", "ShareUpdateExclusiveLock",
    "ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock",
)  # fmt: skip
QUERIES = (
    "UPDATE jobs SET state = 'done' WHERE id = 41",
    "SELECT * FROM jobs WHERE queue = 'default' AND state = 'ready' ORDER BY id LIMIT 2 FOR UPDATE",
    "DELETE FROM jobs WHERE id = 7",
    "INSERT INTO accounts (id, balance) VALUES (3, 0) ON CONFLICT (id) DO UPDATE SET balance = 1",
    "UPDATE accounts\n   SET balance = balance - 10\n WHERE id = 2",
    "select pg_advisory_xact_lock(42, 7)",
    "LOCK TABLE orders IN SHARE ROW EXCLUSIVE MODE",
    "UPDATE t SET note = 'Process 9: waits for ShareLock' WHERE id = 1",
    "<backend information not available>",
)
# (log_line_prefix, what it lets a reader know)
PREFIXES = (
    "%m [%p] ",  # Debian/Ubuntu default since 10
    "%t:%r:%u@%d:[%p]: ",  # the fixture's
    "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ",  # pgbadger's recommendation
    "%m [%p] %q%u@%d ",
    "< %m >",  # old RHEL default
    "%m %e [%p] ",
    "",
    "%p ",
    "[%b] %m [%p-%l] %q[app=%a] ",
    "%n [%p] %x %v ",
    "%t %c %s %i ",
    "%Q %m [%p] ",
)


@dataclass(frozen=True)
class Proc:
    pid: int
    xid: int
    mode: str
    obj: str  # DescribeLockTag() text of the lock it waits for
    kind: str  # the lock type the parser should name
    query: str


@dataclass(frozen=True)
class Model:
    procs: tuple[Proc, ...]  # in the cycle's order; procs[0] reports it (the victim)
    at: str  # YYYY-MM-DD HH:MM:SS
    ms: int
    user: str = "app"
    db: str = "shop"
    app: str = "queue worker 3"
    context: str | None = 'while updating tuple (0,1) in relation "jobs"'
    statement: bool = True  # log_min_error_statement <= ERROR
    verbose: bool = False  # log_error_verbosity = verbose adds LOCATION
    terse: bool = False


def make_model(r: random.Random) -> Model:
    n = r.choice((2, 2, 2, 3, 4))
    pids = r.sample(range(50, 4_194_304), n)
    xids = r.sample(range(500, 3_000_000_000), n)
    procs = []
    for i in range(n):
        blocker = (i + 1) % n
        kind = r.choice(("TRANSACTION", "TRANSACTION", "TUPLE", "RELATION", "ADVISORY", "PAGE"))
        obj = {
            "TRANSACTION": f"transaction {xids[blocker]}",
            "TUPLE": f"tuple ({r.randrange(900)},{r.randrange(1, 90)}) of relation "
            f"{r.randrange(16384, 90000)} of database {r.randrange(1, 20000)}",
            "RELATION": f"relation {r.randrange(16384, 90000)} of database {r.randrange(5, 9)}",
            "ADVISORY": f"advisory lock [{r.randrange(5, 9)},42,7,2]",
            "PAGE": f"page 3 of relation {r.randrange(16384, 90000)} of database 5",
        }[kind]
        procs.append(Proc(pids[i], xids[i], r.choice(MODES), obj, kind, r.choice(QUERIES)))
    return Model(
        tuple(procs),
        f"2024-0{r.randrange(1, 10)}-1{r.randrange(10)} 1{r.randrange(10)}:0{r.randrange(10)}:"
        f"{r.randrange(10, 60)}",
        r.randrange(1000),
        context=r.choice((None, 'while updating tuple (0,1) in relation "jobs"',
                          'while locking tuple (3,7) in relation "accounts"')),  # fmt: skip
        statement=r.random() < 0.8,
        verbose=r.random() < 0.2,
    )


def detail(m: Model) -> str:
    """The errdetail_log text, exactly as DeadLockReport builds it."""
    n = len(m.procs)
    lines = [
        f"Process {p.pid} waits for {p.mode} on {p.obj}; blocked by process "
        f"{m.procs[(i + 1) % n].pid}."
        for i, p in enumerate(m.procs)
    ]
    lines += [f"Process {p.pid}: {p.query}" for p in m.procs]
    return "\n".join(lines)


def parts(m: Model) -> list[tuple[str, str, str]]:
    """(severity, sqlstate, text) of the message and its secondary parts, in elog.c's order."""
    v = m.procs[0]
    out = [("ERROR", "40P01", "deadlock detected")]
    if not m.terse:
        out.append(("DETAIL", "40P01", detail(m)))
        out.append(("HINT", "40P01", "See server log for query details."))
        if m.context:
            out.append(("CONTEXT", "40P01", m.context))
    if m.verbose:
        out.append(("LOCATION", "40P01", "DeadLockReport, deadlock.c:1148"))
    if m.statement and not v.query.startswith("<"):
        out.append(("STATEMENT", "40P01", v.query))
    return out


def prefix(template: str, m: Model, line_no: int, pid: int | None = None) -> str:
    """elog.c log_line_prefix() for the escapes a deadlock's line can carry."""
    pid = m.procs[0].pid if pid is None else pid
    values = {
        "m": f"{m.at}.{m.ms:03d} UTC", "t": f"{m.at} UTC", "p": str(pid), "l": str(line_no),
        "u": m.user, "d": m.db, "a": m.app, "e": "40P01", "c": f"{0x6b0363dd:x}.{pid:x}",
        "h": "10.0.0.7", "r": "10.0.0.7(52144)", "i": "UPDATE", "v": "3/17",
        "x": str(m.procs[0].xid), "s": f"{m.at} UTC", "b": "client backend",
        "n": "1700000000.123", "Q": "0", "%": "%",
    }  # fmt: skip
    out, i = [], 0
    while i < len(template):
        ch = template[i]
        if ch == "%" and i + 1 < len(template):
            esc = template[i + 1]
            if esc != "q":  # %q: stop here for non-session processes (a backend goes on)
                out.append(values.get(esc, ""))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def noise(m: Model, template: str) -> list[list[str]]:
    other = m.procs[-1].pid + 1
    return [
        [prefix(template, m, 1, other) + "LOG:  checkpoint starting: time"],
        [
            prefix(template, m, 2, other) + "LOG:  statement: SELECT 1",
            prefix(template, m, 3, other) + "ERROR:  relation \"nope\" does not exist at character 15",
        ],
    ]


def stderr(m: Model, template: str, sev_words: dict[str, str] | None = None) -> list[list[str]]:
    """Messages (each a list of physical lines) as the stderr/logging-collector file has them:
    every part carries the prefix, continuation lines start with a tab (append_with_tabs)."""
    msg: list[str] = []
    for k, (sev, _state, text) in enumerate(parts(m)):
        word = (sev_words or {}).get(sev, sev)
        body = text if sev_words is None or sev != "ERROR" else sev_words["@message"]
        first, *rest = body.split("\n")
        msg.append(f"{prefix(template, m, k + 1)}{word}:  {first}")
        msg.extend("\t" + r for r in rest)
    before, after = noise(m, template)
    return [before, msg, after]


GERMAN = {
    "ERROR": "FEHLER", "DETAIL": "DETAIL", "HINT": "TIPP", "CONTEXT": "ZUSAMMENHANG",
    "STATEMENT": "ANWEISUNG", "LOCATION": "ORT", "@message": "Verklemmung (Deadlock) entdeckt",
}  # fmt: skip


def german_detail(m: Model) -> str:
    """de.po's rendering of DeadLockReport's two strings (the lock mode is never translated)."""
    n = len(m.procs)
    lines = [
        f"Prozess {p.pid} wartet auf {p.mode}-Sperre auf {p.obj}; blockiert von Prozess "
        f"{m.procs[(i + 1) % n].pid}."
        for i, p in enumerate(m.procs)
    ]
    return "\n".join(lines + [f"Prozess {p.pid}: {p.query}" for p in m.procs])


def csvlog(m: Model, columns: int = 26) -> str:
    """csvlog rows: 23 columns (9.0-12), 24 (13: backend_type), 26 (14+: leader_pid, query_id)."""
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    v = m.procs[0]
    got = dict((s, t) for s, _e, t in parts(m))
    row = [
        f"{m.at}.{m.ms:03d} UTC", m.user, m.db, str(v.pid), "10.0.0.7:52144",
        f"6b0363dd.{v.pid:x}", "7", "UPDATE", f"{m.at} UTC", "3/17", str(v.xid), "ERROR",
        "40P01", "deadlock detected", got.get("DETAIL", ""), got.get("HINT", ""), "", "",
        got.get("CONTEXT", ""), got.get("STATEMENT", ""), "",
        "DeadLockReport, deadlock.c:1148" if m.verbose else "", m.app,
        "client backend", "", "0",
    ]  # fmt: skip
    w.writerow([m.at + ".001 UTC", "", "", "1", "", "6b0363dd.1", "1", "", "", "", "0", "LOG",
                "00000", "checkpoint starting: time", "", "", "", "", "", "", "", "", "",
                "checkpointer", "", "0"][:columns])  # fmt: skip
    w.writerow(row[:columns])
    return buf.getvalue()


def jsonlog(m: Model) -> str:
    v = m.procs[0]
    got = dict((s, t) for s, _e, t in parts(m))
    rec: dict[str, object] = {
        "timestamp": f"{m.at}.{m.ms:03d} UTC", "user": m.user, "dbname": m.db, "pid": v.pid,
        "remote_host": "10.0.0.7", "remote_port": 52144, "session_id": f"6b0363dd.{v.pid:x}",
        "line_num": 7, "ps": "UPDATE", "session_start": f"{m.at} UTC", "vxid": "3/17",
        "txid": v.xid, "error_severity": "ERROR", "state_code": "40P01",
        "message": "deadlock detected",
    }  # fmt: skip
    for key, sev in (("detail", "DETAIL"), ("hint", "HINT"), ("context", "CONTEXT"),
                     ("statement", "STATEMENT")):  # fmt: skip
        if sev in got:
            rec[key] = got[sev]
    rec.update({"application_name": m.app, "backend_type": "client backend", "query_id": 0})
    first = {"timestamp": f"{m.at}.000 UTC", "pid": 1, "error_severity": "LOG",
             "message": "checkpoint starting: time", "backend_type": "checkpointer"}  # fmt: skip
    return json.dumps(first) + "\n" + json.dumps(rec) + "\n"


# --- what happens to the text on its way to a reader -------------------------------------


def syslog(messages: list[list[str]], m: Model) -> list[str]:
    """log_destination = syslog with syslog_sequence_numbers: `[seq-chunk]` per line of a
    message, rsyslog escaping the continuation tab as #011."""
    out = []
    for seq, msg in enumerate(messages, start=5):
        for chunk, line in enumerate(msg, start=1):
            text = "#011" + line[1:] if line.startswith("\t") else line
            out.append(f"Mar  3 {m.at[11:]} db1 postgres[{m.procs[0].pid}]: [{seq}-{chunk}] {text}")
    return out


def journald(messages: list[list[str]], m: Model) -> list[str]:
    """stderr captured by systemd-journald, shown by journalctl: every line its own entry."""
    pid = m.procs[0].pid
    return [f"Mar 03 {m.at[11:]} db1 postgres[{pid}]: {ln}" for msg in messages for ln in msg]


@dataclass
class Mangle:
    """A composition of transformations; `applied` names them (for the failure message)."""

    applied: list[str] = field(default_factory=list)

    def run(self, r: random.Random, lines: list[str], names: list[str]) -> list[str]:
        for name in names:
            lines = getattr(self, name)(r, lines)
            self.applied.append(name)
        return lines

    @staticmethod
    def compose(r: random.Random, lines: list[str]) -> list[str]:
        tag = r.choice(("db_1  | ", "postgres-1  | ", "pg     | "))
        return [tag + ln for ln in lines]

    @staticmethod
    def kubectl(r: random.Random, lines: list[str]) -> list[str]:
        return [f"2024-03-03T10:00:{i % 60:02d}.{i:09d}Z {ln}" for i, ln in enumerate(lines)]

    @staticmethod
    def spaces(r: random.Random, lines: list[str]) -> list[str]:
        ind = r.choice(("    ", "  ", " ", ""))
        return [ind + ln[1:] if ln.startswith("\t") else ln for ln in lines]

    @staticmethod
    def crlf(r: random.Random, lines: list[str]) -> list[str]:
        return [ln + "\r" for ln in lines]

    @staticmethod
    def blank(r: random.Random, lines: list[str]) -> list[str]:
        return [x for ln in lines for x in (ln, "")]

    @staticmethod
    def quote(r: random.Random, lines: list[str]) -> list[str]:
        return ["> " + ln if ln else ">" for ln in lines]

    @staticmethod
    def fence(r: random.Random, lines: list[str]) -> list[str]:
        return ["```", *lines, "```"]

    @staticmethod
    def indent(r: random.Random, lines: list[str]) -> list[str]:
        return ["    " + ln for ln in lines]

    @staticmethod
    def onespace(r: random.Random, lines: list[str]) -> list[str]:
        return [ln.replace(":  ", ": ", 1) for ln in lines]

    @staticmethod
    def procbreak(r: random.Random, lines: list[str]) -> list[str]:
        """`Process N:` alone, its statement on the next line (a paste re-flowed)."""
        out = []
        for ln in lines:
            head, sep, rest = ln.partition(": ")
            if sep and head.lstrip("\t ").startswith("Process ") and " waits " not in head:
                out += [head + ":", "\t" + rest]
            else:
                out.append(ln)
        return out

    @staticmethod
    def headless(r: random.Random, lines: list[str]) -> list[str]:
        """A paste that starts at the DETAIL: the ERROR line is lost."""
        return [ln for ln in lines if "deadlock detected" not in ln]
