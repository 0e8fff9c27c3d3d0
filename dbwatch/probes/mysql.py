"""MySQL/MariaDB probes: InnoDB transactions with their sessions, settings, queue indexes."""

from __future__ import annotations

from typing import Any

from ..targets import Connection
from . import jsonable, probe, sql

TRX_LIMIT = 2000
PROCESS_GRANT = "GRANT PROCESS ON *.* TO '<monitor>'@'%';"


@probe("my.trx", "mysql", grant=PROCESS_GRANT, server_wide=True)
def trx(conn: Connection) -> Any:
    return [jsonable(r) for r in conn.rows(sql("mysql", "trx", conn.version), {"limit": TRX_LIMIT})]


@probe("my.settings", "mysql", ttl=60.0)
def settings(conn: Connection) -> Any:
    # MariaDB keeps information_schema.GLOBAL_VARIABLES; MySQL 8 moved it (settings_mysql_post_80000).
    rows = conn.rows(sql("mysql", "settings", conn.version))
    return {str(r["name"]).lower(): r["value"] for r in rows}


@probe("my.queue_indexes", "mysql", ttl=300.0)
def queue_indexes(conn: Connection) -> Any:
    rows = [jsonable(r) for r in conn.rows(sql("mysql", "queue_indexes", conn.version))]
    for r in rows:
        r["columns"] = [c for c in str(r.get("columns") or "").split(",") if c]
        r["is_primary"] = r.get("index_name") == "PRIMARY"
    return rows
