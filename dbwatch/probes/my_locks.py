"""MySQL/MariaDB lock waits (MY101): waiter, lock and blocker, from whichever source exists.

The source is chosen by which table exists (information_schema.TABLES), never by version:
performance_schema.data_lock_waits (MySQL 8), information_schema.INNODB_LOCK_WAITS
(MariaDB, MySQL 5.7), else the sys.innodb_lock_waits view.
"""

from __future__ import annotations

from dataclasses import replace

from ..snapshot.my import MyLockWait, MyLockWaits
from ..snapshot.values import as_row
from ..targets import Connection
from .mysql import PROCESS_GRANT
from .registry import probe
from .sqlfiles import sql

WAIT_LIMIT = 1000
SOURCES = (  # preference order: (schema, table) -> SQL file
    (("performance_schema", "data_lock_waits"), "lock_waits_pfs"),
    (("information_schema", "innodb_lock_waits"), "lock_waits_innodb"),
    (("sys", "innodb_lock_waits"), "lock_waits_sys"),
)


def lock_wait_source(conn: Connection) -> str | None:
    """The SQL file name for this server's lock-wait tables, or None when it has none."""
    found = {
        (r["table_schema"], r["table_name"])
        for r in conn.rows(sql("mysql", "lock_wait_tables", conn.version))
    }
    for table, name in SOURCES:
        if table in found:
            return name
    return None


def _table(raw: str | None) -> str | None:
    """`test`.`jobs` (MariaDB's lock_table) -> test.jobs."""
    return None if raw is None else raw.replace("`", "")


def read_lock_waits(conn: Connection) -> MyLockWaits:
    """The server's lock waits (also what `terminate --blocking` builds its graph from)."""
    source = lock_wait_source(conn)
    if source is None:
        return MyLockWaits(None, ())
    rows = conn.rows(sql("mysql", source, conn.version), {"limit": WAIT_LIMIT})
    waits = (MyLockWait.from_row(as_row(r)) for r in rows)
    return MyLockWaits(
        source, tuple(replace(w, locked_table=_table(w.locked_table)) for w in waits)
    )


@probe("my.lock_waits", "mysql", grant=PROCESS_GRANT, server_wide=True)
def lock_waits(conn: Connection) -> MyLockWaits:
    return read_lock_waits(conn)
