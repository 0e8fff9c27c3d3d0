"""SessionIdentity: the one name of a server session (pid + backend_start, thread + trx id),
derived from the snapshot's session rows (PgSession.identity, MyThread.identity)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from ..frozen import frozen
from .values import iso, opt_datetime, opt_int, opt_str

# pg_stat_activity.state of a session holding a transaction open between statements
IDLE_STATES = ("idle in transaction", "idle in transaction (aborted)")


def _int(value: object) -> int | None:
    """An id: a number or its integer text; other text is no id."""
    if isinstance(value, str):
        return int(value) if value.strip().lstrip("-").isdigit() else None
    return opt_int(value)


@frozen
class SessionIdentity:
    """One server session as a finding saw it; pids and thread ids are recycled, so a pid
    alone is never an identity. PostgreSQL: pid + backend_start (+ xact_start, the
    transaction); MySQL/MariaDB: thread id + InnoDB trx id."""

    engine: str  # postgresql | mysql | mariadb
    server: str  # the target's name
    database: str | None = None
    pid: int | None = None  # PostgreSQL backend pid
    backend_start: datetime | None = None
    xact_start: datetime | None = None  # None: no transaction (or not recorded)
    thread_id: int | None = None  # MySQL/MariaDB processlist id
    trx_id: str | None = None

    @property
    def is_mysql(self) -> bool:
        return self.engine in ("mysql", "mariadb")

    @property
    def usable(self) -> bool:
        """Enough to find the very same session again."""
        if self.is_mysql:
            return self.thread_id is not None and self.trx_id is not None
        return self.pid is not None and self.backend_start is not None

    def key(self) -> list[str | None]:
        """For fingerprints: stable text, whatever the driver's types."""
        parts = (self.pid, self.backend_start, self.xact_start, self.thread_id, self.trx_id)
        return [
            self.engine,
            self.server,
            self.database,
            *(
                None if p is None else (p.isoformat() if isinstance(p, datetime) else str(p))
                for p in parts
            ),
        ]

    def to_dict(self) -> dict[str, str | int | None]:
        return {
            "engine": self.engine,
            "server": self.server,
            "database": self.database,
            "pid": self.pid,
            "backend_start": iso(self.backend_start),
            "xact_start": iso(self.xact_start),
            "thread_id": self.thread_id,
            "trx_id": self.trx_id,
        }

    @classmethod
    def from_dict(cls, d: object) -> SessionIdentity | None:
        """The way back from stored JSON (the daemon's state: a finding of a rule that did
        not run this cycle); the live ways carry the row's own values."""
        if not isinstance(d, Mapping) or not d.get("engine"):
            return None
        return cls(
            engine=str(d["engine"]),
            server=str(d.get("server") or ""),
            database=opt_str(d.get("database")),
            pid=_int(d.get("pid")),
            backend_start=opt_datetime(d.get("backend_start")),
            xact_start=opt_datetime(d.get("xact_start")),
            thread_id=_int(d.get("thread_id")),
            trx_id=opt_str(d.get("trx_id")),
        )
