"""MySQL/MariaDB probes: InnoDB transactions with their sessions, settings, queue indexes."""

from __future__ import annotations

from typing import Any

from ..snapshot.values import as_row, to_str
from ..targets import Connection
from . import jsonable, probe, sql

TRX_LIMIT = 2000
PROCESS_GRANT = "GRANT PROCESS ON *.* TO '<monitor>'@'%';"


@probe("my.trx", "mysql", grant=PROCESS_GRANT, server_wide=True)
def trx(conn: Connection) -> Any:
    return [jsonable(r) for r in conn.rows(sql("mysql", "trx", conn.version), {"limit": TRX_LIMIT})]


@probe("my.settings", "mysql", ttl=60.0)
def settings(conn: Connection) -> dict[str, object]:
    # MariaDB keeps information_schema.GLOBAL_VARIABLES; MySQL 8 moved it (settings_mysql_post_80000).
    rows = map(as_row, conn.rows(sql("mysql", "settings", conn.version)))
    return {to_str(r.get("name")).lower(): r.get("value") for r in rows}


@probe("my.queue_indexes", "mysql", ttl=300.0)
def queue_indexes(conn: Connection) -> Any:
    """Index columns of Laravel-shaped jobs tables (QU301), per database in scope. Grouped
    here rather than in SQL (no GROUP BY on information_schema: see queue_tables.sql)."""
    schema = getattr(conn.spec, "scoped_database", None)
    name = "queue_indexes_scoped" if schema else "queue_indexes"
    hits: dict[tuple[str, str], set[str]] = {}
    for r in map(jsonable, conn.rows(sql("mysql", name, conn.version), {"schema": schema})):
        hits.setdefault((str(r["schema"]), str(r["table_name"])), set()).add(r["column_name"])
    rows: list[dict[str, Any]] = []
    for sch, table in sorted(k for k, cols in hits.items() if len(cols) == 3)[:1000]:
        found: dict[str, list[tuple[int, str]]] = {}
        text = sql("mysql", "queue_index_columns", conn.version)
        for r in map(jsonable, conn.rows(text, {"schema": sch, "table": table})):
            found.setdefault(str(r["index_name"]), []).append((int(r["seq"]), r["column_name"]))
        for index, cols in sorted(found.items()):
            rows.append(
                {
                    "schema": sch,
                    "table_name": table,
                    "index_name": index,
                    "columns": [c for _, c in sorted(cols)],
                    "is_primary": index == "PRIMARY",
                }
            )
    return rows
