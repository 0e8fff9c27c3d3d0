"""MySQL/MariaDB probes: InnoDB transactions with their sessions, settings, queue indexes."""

from __future__ import annotations

from ..snapshot.my import MyThread
from ..snapshot.queues import QueueIndex
from ..snapshot.values import as_row, opt_str, to_int, to_str
from ..targets import Connection
from .registry import probe
from .sqlfiles import sql

TRX_LIMIT = 2000
PROCESS_GRANT = "GRANT PROCESS ON *.* TO '<monitor>'@'%';"


@probe("my.trx", "mysql", grant=PROCESS_GRANT, server_wide=True)
def trx(conn: Connection) -> tuple[MyThread, ...]:
    rows = conn.rows(sql("mysql", "trx", conn.version), {"limit": TRX_LIMIT})
    return tuple(MyThread.from_row(as_row(r)) for r in rows)


@probe("my.settings", "mysql", ttl=60.0)
def settings(conn: Connection) -> dict[str, object]:
    # MariaDB keeps information_schema.GLOBAL_VARIABLES; MySQL 8 moved it (settings_mysql_post_80000).
    rows = map(as_row, conn.rows(sql("mysql", "settings", conn.version)))
    return {to_str(r.get("name")).lower(): r.get("value") for r in rows}


@probe("my.queue_indexes", "mysql", ttl=300.0)
def queue_indexes(conn: Connection) -> tuple[QueueIndex, ...]:
    """Index columns of Laravel-shaped jobs tables (QU301), per database in scope. Grouped
    here rather than in SQL (no GROUP BY on information_schema: see queue_tables.sql)."""
    schema = opt_str(getattr(conn.spec, "scoped_database", None))
    name = "queue_indexes_scoped" if schema else "queue_indexes"
    hits: dict[tuple[str, str], set[str]] = {}
    for r in map(as_row, conn.rows(sql("mysql", name, conn.version), {"schema": schema})):
        key = (to_str(r.get("schema")), to_str(r.get("table_name")))
        hits.setdefault(key, set()).add(to_str(r.get("column_name")))
    rows: list[QueueIndex] = []
    text = sql("mysql", "queue_index_columns", conn.version)
    for sch, table in sorted(k for k, cols in hits.items() if len(cols) == 3)[:1000]:
        found: dict[str, list[tuple[int, str]]] = {}
        for r in map(as_row, conn.rows(text, {"schema": sch, "table": table})):
            column = (to_int(r.get("seq")), to_str(r.get("column_name")))
            found.setdefault(to_str(r.get("index_name")), []).append(column)
        rows.extend(
            QueueIndex(
                schema=sch,
                table_name=table,
                index_name=index,
                columns=tuple(c for _, c in sorted(cols)),
                is_primary=index == "PRIMARY",
            )
            for index, cols in sorted(found.items())
        )
    return tuple(rows)
