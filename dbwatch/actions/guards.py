"""Pure selection and guard logic for `dbwatch terminate` and the daemon's terminate action.

No I/O: sessions come in as Session records (a session row with what terminate's listing
adds: actions.sessions), Decisions go out.
Criteria are ANDed; guards (protections) always win over criteria.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from datetime import datetime

from ..checks.origin import statement_origin
from ..config import TerminateConfig
from ..durations import format_duration
from ..findings import SessionIdentity
from ..frozen import frozen
from ..snapshot.my import MyThread
from ..snapshot.pg import PgSession

IDLE_STATES = ("idle in transaction", "idle in transaction (aborted)")
PG_BACKUP_APPS = ("pg_dump", "pg_dumpall", "pg_basebackup")
MY_BACKUP_APPS = (
    "mysqldump",
    "mariadb-dump",
    "mysqlpump",
    "mydumper",
    "mariabackup",
    "mariadb-backup",
    "xtrabackup",
)
MYSQLDUMP_MARK = "/*!40001 SQL_NO_CACHE */"  # every mysqldump table read carries it
# What dump and backup tools send, as the processlist shows it (upper-cased, spaces squeezed):
# mysqldump/mariadb-dump/mydumper statements, mariabackup/xtrabackup locks.
MY_DUMP_MARKS = (
    "/*!40001 SQL_NO_CACHE */",
    "/*!40100 WITH CONSISTENT SNAPSHOT */",
    "FLUSH TABLES WITH READ LOCK",
    "FLUSH /*!40101 LOCAL */ TABLES",
    "BACKUP STAGE",
    "LOCK TABLES FOR BACKUP",
    "LOCK INSTANCE FOR BACKUP",
    "SAVEPOINT SP",
    "ROLLBACK TO SAVEPOINT SP",
    "RELEASE SAVEPOINT SP",
    "/*!40100 SET @@SQL_MODE",
    "/*!40103 SET TIME_ZONE",
    "SQL_QUOTE_SHOW_CREATE",
    "SET SESSION CHARACTER_SET_RESULTS = 'BINARY'",
    "SELECT LOGFILE_GROUP_NAME",
    "SHOW VARIABLES LIKE 'NDBINFO",
    # mariadb-dump's catalog reads (as its binary spells them)
    "FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA = DATABASE()",
    "FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_SCHEMA=DATABASE()",
    "FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA=DATABASE()",
    "FROM INFORMATION_SCHEMA.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = DATABASE()",
    "FROM INFORMATION_SCHEMA.VIEWS WHERE TABLE_NAME=",
    "SHOW STATUS LIKE 'BINLOG_SNAPSHOT_",
)
MY_DUMP_PREFIXES = (
    "SHOW CREATE ",
    "SHOW FIELDS FROM ",
    "SHOW COLUMNS FROM ",
    "SHOW TABLE STATUS ",
    "SHOW TABLES LIKE ",
    "SHOW FULL TABLES",
    "SHOW TRIGGERS ",
)
MY_SYSTEM_USERS = (
    "system user",
    "event_scheduler",
    "unauthenticated user",
    "mysql.session",
    "mysql.sys",
    "mariadb.sys",
    "rdsadmin",
)
MY_SYSTEM_COMMANDS = (
    "Binlog Dump",
    "Binlog Dump GTID",
    "Daemon",
    "Slave_IO",
    "Slave_SQL",
    "Slave_worker",
    "Register Slave",
    "Killed",
)
ACTIONS = (
    "would_terminate",
    "would_cancel",
    "terminated",
    "cancelled",
    "skipped_protected",
    "gone",
    "failed",
)


@frozen
class Pin:
    """What is not a session: a prepared transaction, a replication slot, a standby's
    feedback (listed with the statement that ends it, never killed here), or a finding that
    names no session dbwatch may end."""

    kind: str  # prepared_xact | replication_slot | standby_feedback | (a finding's kind)
    name: str | None = None  # gid / slot name / what the finding names
    statement: str | None = None  # what ends it, for a person to run
    database: str | None = None
    user: str | None = None
    host: str | None = None
    xid_age: int | None = None
    age: float | None = None  # seconds


@frozen
class Session:
    """A candidate, which is one of: `row`, the session row a listing read (PgSession: a
    pg.sessions row; MyThread: a thread of terminate's listing), with what the listing adds;
    `named`, only the identity a finding names (no live row stands for it: gone, or outside
    the target's scope); `pin`, a holder that is not a session (never killed).

    The guards read the row through the properties below: nothing of it is copied."""

    target: str
    engine: str  # postgresql | mysql | mariadb
    row: PgSession | MyThread | None = None
    named: SessionIdentity | None = None
    pin: Pin | None = None
    own: bool = False  # dbwatch's own connection, by connection id (targets.own)
    blocks: int = 0  # sessions waiting behind it when it is a chain root
    holds_horizon: bool = False  # PG201 reports it
    programs_known: bool = True  # MySQL: client program names readable (performance_schema)
    seen_at: float | None = None  # time.monotonic() of the listing that read it

    def __post_init__(self) -> None:
        if [self.row, self.named, self.pin].count(None) != 2:
            raise ValueError("a candidate is one of a session row, a name, or a pin")

    @classmethod
    def named_by(cls, target: str, ident: SessionIdentity) -> Session:
        """The session a finding's identity names, when no live row stands for it (gone, or
        outside the target's scope): its identity only, nothing to judge it by."""
        return cls(target=target, engine=ident.engine, named=ident)

    @property
    def is_mysql(self) -> bool:
        return self.engine in ("mysql", "mariadb")

    @property
    def idle_now(self) -> bool:
        if self.is_mysql:
            return self.command == "Sleep"
        return bool(self.state) and str(self.state).startswith("idle")

    # --- what the guards read, from the row (or the identity, or the pin) ----------------

    @property
    def kind(self) -> str:
        """session | prepared_xact | replication_slot | standby_feedback | a finding's kind."""
        return "session" if self.pin is None else self.pin.kind

    @property
    def pid(self) -> int | None:
        """PostgreSQL backend pid."""
        if isinstance(self.row, PgSession):
            return self.row.pid
        return self.named.pid if self.named is not None else None

    @property
    def thread_id(self) -> int | None:
        """MySQL/MariaDB processlist id."""
        if isinstance(self.row, MyThread):
            return self.row.thread_id
        return self.named.thread_id if self.named is not None else None

    @property
    def backend_start(self) -> datetime | None:
        """With the pid, a PostgreSQL session's identity."""
        if isinstance(self.row, PgSession):
            return self.row.backend_start
        return self.named.backend_start if self.named is not None else None

    @property
    def xact_start(self) -> datetime | None:
        """The listed transaction (a name only says none: the kill needs a live row)."""
        return self.row.xact_start if isinstance(self.row, PgSession) else None

    @property
    def trx_id(self) -> str | None:
        """InnoDB transaction id."""
        if isinstance(self.row, MyThread):
            return self.row.trx_id
        return self.named.trx_id if self.named is not None else None

    @property
    def user(self) -> str | None:
        return self.row.user if self.row is not None else _pin(self).user

    @property
    def application(self) -> str | None:
        """PostgreSQL application_name; MySQL: the client's program name (performance_schema)."""
        if isinstance(self.row, PgSession):
            return self.row.application
        return self.row.program if self.row is not None else None

    @property
    def host(self) -> str | None:
        return self.row.host if self.row is not None else _pin(self).host

    @property
    def database(self) -> str | None:
        if isinstance(self.row, PgSession):
            return self.row.database
        if isinstance(self.row, MyThread):
            return self.row.db
        return self.named.database if self.named is not None else _pin(self).database

    @property
    def state(self) -> str | None:
        """PostgreSQL state; MySQL: the InnoDB trx_state, else the thread's STATE."""
        if isinstance(self.row, PgSession):
            return self.row.state
        return (self.row.trx_state or self.row.state) if self.row is not None else None

    @property
    def command(self) -> str | None:
        """MySQL COMMAND."""
        return self.row.command if isinstance(self.row, MyThread) else None

    @property
    def query_id(self) -> int | None:
        """MariaDB QUERY_ID: moves with every statement."""
        return self.row.query_id if isinstance(self.row, MyThread) else None

    @property
    def backend_type(self) -> str | None:
        return self.row.backend_type if isinstance(self.row, PgSession) else None

    @property
    def age(self) -> float | None:
        """Transaction age, seconds. MySQL: a statement outside InnoDB is its own transaction."""
        r = self.row
        if isinstance(r, PgSession):
            return r.xact_seconds
        if isinstance(r, MyThread):
            if r.trx_id is not None:
                return float(r.trx_seconds or 0)
            return float(r.command_seconds or 0) if r.command == "Query" else None
        return _pin(self).age

    @property
    def idle(self) -> float | None:
        """Seconds idle (PostgreSQL: in this state; MySQL: sleeping)."""
        r = self.row
        if isinstance(r, PgSession):
            return r.state_seconds if (r.state or "").startswith("idle") else None
        if isinstance(r, MyThread):
            return float(r.command_seconds or 0) if r.sleeping else None
        return None

    @property
    def idle_in_transaction(self) -> bool:
        r = self.row
        if isinstance(r, MyThread):
            return r.sleeping and r.trx_id is not None
        return r is not None and r.idle_in_transaction

    @property
    def query(self) -> str | None:
        return self.row.query if self.row is not None else None

    @property
    def superuser(self) -> bool | None:
        """None: not readable (MySQL: this account cannot see other accounts' grants)."""
        return self.row.superuser if self.row is not None else None

    @property
    def is_self(self) -> bool:
        return self.own or (self.row is not None and self.row.is_self)

    @property
    def xid_age(self) -> int | None:
        """XIDs behind: greatest(age(backend_xid), age(backend_xmin))."""
        if isinstance(self.row, PgSession):
            return self.row.horizon_age
        return _pin(self).xid_age if self.row is None else None

    @property
    def name(self) -> str | None:
        """gid / slot name of a holder that is not a session."""
        return _pin(self).name

    @property
    def statement(self) -> str | None:
        """What ends a holder that is not a session, for a person to run."""
        return _pin(self).statement

    @property
    def standby(self) -> bool:
        """The PostgreSQL target is in recovery."""
        return isinstance(self.row, PgSession) and self.row.standby

    @property
    def rows_modified(self) -> int | None:
        """InnoDB trx_rows_modified."""
        return self.row.trx_rows_modified if isinstance(self.row, MyThread) else None


_NO_PIN = Pin(kind="session")


def _pin(s: Session) -> Pin:
    return s.pin if s.pin is not None else _NO_PIN


@frozen
class Criteria:
    """What to select; every given criterion must hold (AND)."""

    older_than: float | None = None
    idle_in_transaction: bool = False
    holding_xmin: bool = False
    blocking: bool = False
    match_user: re.Pattern[str] | None = None
    ignore_user: re.Pattern[str] | None = None
    match_app: re.Pattern[str] | None = None
    ignore_app: re.Pattern[str] | None = None
    match_host: re.Pattern[str] | None = None
    match_query: re.Pattern[str] | None = None

    @property
    def given(self) -> bool:
        return any(v is not None and v is not False for v in self.__dict__.values())


@frozen
class Policy:
    """Who is never touched, and how (cancel or terminate)."""

    protect_users: frozenset[str] = frozenset()
    protect_apps: frozenset[str] = frozenset()
    include_superusers: bool = False
    include_backups: bool = False
    cancel: bool = False

    @classmethod
    def from_config(
        cls,
        cfg: TerminateConfig,
        users: Iterable[str] = (),
        apps: Iterable[str] = (),
        include_superusers: bool = False,
        include_backups: bool = False,
        cancel: bool = False,
    ) -> Policy:
        return cls(
            frozenset(cfg.protect_users) | frozenset(users),
            frozenset(cfg.protect_apps) | frozenset(apps),
            cfg.include_superusers or include_superusers,
            include_backups,
            cancel,
        )


@frozen
class Decision:
    session: Session
    action: str
    reason: str
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        s = self.session
        return {
            "action": self.action,
            "target": s.target,
            "engine": s.engine,
            "kind": s.kind,
            "pid": s.pid,
            "thread_id": s.thread_id,
            "user": s.user,
            "application": s.application,
            "host": s.host,
            "database": s.database,
            "age": format_duration(s.age) if s.age is not None else None,
            "age_seconds": round(s.age, 1) if s.age is not None else None,
            "idle_seconds": round(s.idle, 1) if s.idle is not None else None,
            "state": s.state if not s.is_mysql else (s.command or s.state),
            "query": s.query,
            "reason": self.reason,
            "statement": statement_for(s, self.action),
            "error": self.error,
            "backend_start": _iso(s.backend_start),
            "xact_start": _iso(s.xact_start),
            "trx_id": s.trx_id,
            "name": s.name,
            "origin": statement_origin(s.query, s.application, s.host),
        }


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def statement_for(s: Session, action: str) -> str | None:
    """The equivalent SQL for a person: what was (or would be) run, or what to run."""
    if s.kind != "session":
        return s.statement
    cancel = action in ("would_cancel", "cancelled")
    if s.is_mysql:
        return f"KILL QUERY {s.thread_id}" if cancel else f"KILL {s.thread_id}"
    fn = "pg_cancel_backend" if cancel else "pg_terminate_backend"
    return f"SELECT {fn}({s.pid})"


def matches(s: Session, c: Criteria) -> bool:
    """All given criteria hold. Non-session holders are listed with --holding-xmin only."""
    if s.kind != "session":
        return c.holding_xmin and s.holds_horizon
    if c.older_than is not None and (s.age is None or s.age < c.older_than):
        return False
    if c.idle_in_transaction and not s.idle_in_transaction:
        return False
    if c.holding_xmin and not s.holds_horizon:
        return False
    if c.blocking and s.blocks <= 0:
        return False
    wanted = (
        (c.match_user, s.user),
        (c.match_app, s.application),
        (c.match_host, s.host),
        (c.match_query, s.query),
    )
    if any(p is not None and not p.search(v or "") for p, v in wanted):
        return False
    unwanted = ((c.ignore_user, s.user), (c.ignore_app, s.application))
    return not any(p is not None and p.search(v or "") for p, v in unwanted)


def protection(s: Session, p: Policy) -> str | None:
    """Why this session must not be touched, or None. Checked before every action."""
    if s.kind != "session":
        return _holder_reason(s)
    if s.is_self:  # by connection id, never by a name a session can choose
        return "dbwatch's own connection"
    system = _system_reason(s)
    if system:
        return system
    if not p.include_superusers:
        if s.superuser:
            return "superuser (use --include-superusers)"
        if s.superuser is None and s.is_mysql and s.user == "root":
            return "root (superuser status not readable: grant SELECT on mysql.user)"
    if not p.include_backups:
        if _is_backup(s):
            what = s.application or "a dump's statement, now or earlier in its transaction"
            return f"backup ({what}; use --include-backups)"
        maybe = _possible_backup(s)
        if maybe:
            return maybe
    if s.user in p.protect_users:
        return f"protected user {s.user}"
    if s.application and s.application in p.protect_apps:
        return f"protected application {s.application}"
    if not s.is_mysql and s.backend_start is None:
        return "identity not visible to this user (grant pg_monitor); never killed blind"
    if p.cancel and s.idle_now:
        return "idle: a cancel does nothing to an idle session (drop --cancel to terminate)"
    return None


def _holder_reason(s: Session) -> str:
    if s.kind == "prepared_xact":
        return (
            f"prepared transaction {s.name!r} (database {s.database}): never ended "
            f"automatically; run {s.statement} or --rollback-prepared {s.name} --execute"
        )
    if s.kind == "replication_slot":
        return (
            f"replication slot {s.name!r}: never dropped automatically; run {s.statement} "
            f"or --drop-slot {s.name} --execute"
        )
    return (
        "held by a standby's hot_standby_feedback: cancel the query on the standby "
        "(dbwatch terminate <standby URL> --holding-xmin --cancel)"
    )


def _system_reason(s: Session) -> str | None:
    if s.is_mysql:
        if (s.user or "") in MY_SYSTEM_USERS or (s.command or "") in MY_SYSTEM_COMMANDS:
            return f"system or replication thread ({s.user}, {s.command})"
        return None
    btype = s.backend_type or "client backend"
    if btype == "client backend":
        return None
    if btype == "walsender":
        return "replication connection (walsender)"
    if btype.startswith("autovacuum"):
        return f"autovacuum ({btype})"
    return f"system process ({btype})"


# MySQL/MariaDB transactions seen running a dump's statement: (target, thread id, InnoDB trx
# id, its start). Between its marked statements a dump runs short unmarked ones (a hammer of kills every
# 50 ms caught one once); the transaction stays the dump's for its life, so once seen it is
# protected whatever it runs. Per process (the daemon; one terminate run's listing and its
# re-check at the kill), the newest DUMP_TRX_MAX kept.
_DUMP_TRX: OrderedDict[tuple[str, int, str, datetime], None] = OrderedDict()
_DUMP_TRX_LOCK = threading.Lock()
DUMP_TRX_MAX = 1024


def _is_backup(s: Session) -> bool:
    app = (s.application or "").lower()
    if s.is_mysql:
        if app in MY_BACKUP_APPS:
            return True
        # a read-only transaction's id can come back for the connection's next one: its
        # start time tells them apart
        tid, trx = s.thread_id, s.trx_id
        started = s.row.trx_started if isinstance(s.row, MyThread) else None
        key = (s.target, tid, trx, started) if tid is not None and trx and started else None
        if is_dump_statement(s.query):
            if key is not None:
                with _DUMP_TRX_LOCK:
                    _DUMP_TRX[key] = None
                    _DUMP_TRX.move_to_end(key)
                    while len(_DUMP_TRX) > DUMP_TRX_MAX:
                        _DUMP_TRX.popitem(last=False)
            return True
        return key is not None and key in _DUMP_TRX
    return app in PG_BACKUP_APPS or _is_pg_dump_statement(s.query)


def is_dump_statement(query: str | None) -> bool:
    """A statement only dump/backup tools send (the processlist shows it while it runs)."""
    q = " ".join((query or "")[:4096].upper().split())
    return any(m in q for m in MY_DUMP_MARKS) or q.startswith(MY_DUMP_PREFIXES)


def _is_pg_dump_statement(query: str | None) -> bool:
    """pg_dump's data phase: COPY ... TO stdout (pg_stat_activity keeps the last query)."""
    q = " ".join((query or "")[:4096].split()).lower()
    return q.startswith("copy ") and q.endswith("to stdout;")


def _possible_backup(s: Session) -> str | None:
    """Without client program names (MariaDB's performance_schema is OFF by default) a dump
    between two statements looks like any idle session: a transaction that has written
    nothing may be one, so it is left alone (dumps never write rows); so is one with no
    transaction whose statement is not visible. A running statement is visible: a dump's
    carries its marks (is_dump_statement)."""
    if not s.is_mysql or s.programs_known or (s.rows_modified or 0) > 0:
        return None
    if s.command not in ("Sleep", None) and s.query:
        return None
    return (
        "may be a backup: its transaction has written nothing and client program names are "
        "not readable (performance_schema is OFF); use --include-backups to allow"
    )


def describe(s: Session) -> str:
    """Why it was selected, in words."""
    parts = []
    if s.age is not None:
        parts.append(f"transaction {format_duration(s.age)} old")
    if s.idle_in_transaction and s.idle is not None:
        parts.append(f"idle in transaction for {format_duration(s.idle)}")
    if s.holds_horizon:
        parts.append(f"holds the xmin horizon ({s.xid_age} XIDs)")
    if s.blocks:
        parts.append(f"root of a lock chain blocking {s.blocks}")
    return "; ".join(parts) or "matches the criteria"


def _oldest_first(s: Session) -> tuple[int, float]:
    return (0 if s.age is not None else 1, -(s.age or 0.0))


def plan(
    sessions: Iterable[Session], criteria: Criteria, policy: Policy, limit: int | None = None
) -> tuple[list[Decision], int]:
    """Dry-run decisions, oldest first; returns them and how many --limit left out."""
    out: list[Decision] = []
    acted = left_out = 0
    for s in sorted((s for s in sessions if matches(s, criteria)), key=_oldest_first):
        why = protection(s, policy)
        if why:
            out.append(Decision(s, "skipped_protected", why))
            continue
        if limit is not None and acted >= limit:
            left_out += 1
            continue
        acted += 1
        out.append(Decision(s, intended_action(s, policy), describe(s)))
    return out, left_out


def intended_action(s: Session, policy: Policy) -> str:
    """Terminate unless asked to cancel; on a standby a running query is only cancelled."""
    if policy.cancel or (s.standby and not s.idle_now):
        return "would_cancel"
    return "would_terminate"
