"""InnoDB monitor probes: the status text (parsed here, once, into typed data: the deadlock
is kept as parsed, diagnosed where it is used) and the counters."""

from __future__ import annotations

from dataclasses import replace

from ..snapshot.my import ErrorLogDeadlocks, InnodbCounters, InnodbStatusSection
from ..snapshot.values import as_row, opt_int, to_str
from ..targets import Connection
from .registry import probe
from .sqlfiles import sql

PROCESS_GRANT = "GRANT PROCESS ON *.* TO '<monitor>'@'%';"
ERROR_LOG_WINDOW = 86_400  # seconds of performance_schema.error_log read per look


def error_log_deadlocks(conn: Connection) -> ErrorLogDeadlocks:
    """MySQL 8.0.22+: every deadlock in performance_schema.error_log (no file access needed).
    Untested live: no MySQL 8 server here; the row shape follows the manual."""
    if not conn.version.at_least("mysql", 8, 0, 22):
        return ErrorLogDeadlocks(available=False)
    from ..parsers.perfschema import deadlocks_from_rows  # only here: MySQL 8.0.22+ only

    try:
        rows = conn.rows(sql("mysql", "error_log_deadlocks", conn.version), (ERROR_LOG_WINDOW,))
    except Exception as exc:  # noqa: BLE001 - optional source: say why, keep the status probe
        return ErrorLogDeadlocks(
            available=False,
            error=f"{type(exc).__name__}: {str(exc)[:200]}",
            grant="GRANT SELECT ON performance_schema.error_log TO '<monitor>'@'%';",
        )
    return ErrorLogDeadlocks(available=True, deadlocks=tuple(deadlocks_from_rows(rows)))


@probe("my.innodb_status", "mysql", grant=PROCESS_GRANT, server_wide=True)
def innodb_status(conn: Connection) -> InnodbStatusSection:
    rows = conn.rows(sql("mysql", "innodb_status", conn.version))
    text = to_str(as_row(rows[0]).get("status")) if rows else ""
    return replace(InnodbStatusSection.from_text(text), error_log=error_log_deadlocks(conn))


@probe("my.innodb_counters", "mysql", server_wide=True)
def innodb_counters(conn: Connection) -> InnodbCounters:
    values: dict[str, int | None] = {}
    for r in map(as_row, conn.rows(sql("mysql", "innodb_counters", conn.version))):
        values[to_str(r.get("name")).lower()] = opt_int(r.get("value"))
    return InnodbCounters(
        deadlocks=values.get("innodb_deadlocks"),
        history_list_length=values.get("innodb_history_list_length"),
    )
