"""InnoDB monitor probes: the status text (parsed here, once, into typed data) and the counters."""

from __future__ import annotations

from dataclasses import replace

from ..deadlocks.diagnosis import diagnose
from ..parsers.innodb_deadlock import Deadlock
from ..parsers.innodb_status import parse_status
from ..snapshot.my import DeadlockRecord, ErrorLogDeadlocks, InnodbCounters, InnodbStatusSection
from ..snapshot.values import as_row, opt_int, to_str
from ..targets import Connection
from . import probe, sql

PROCESS_GRANT = "GRANT PROCESS ON *.* TO '<monitor>'@'%';"
OLDEST_KEPT = 20


def deadlock_record(dl: Deadlock) -> DeadlockRecord:
    """The SPEC §6 deadlock object with its diagnosis and a dedupe key."""
    out: DeadlockRecord = dict(dl.to_dict())
    out["diagnosis"] = diagnose(dl).to_dict()
    out["key"] = deadlock_key(dl)
    out["too_deep"] = dl.too_deep
    return out


def deadlock_key(dl: Deadlock) -> str:
    """The trx ids (unique on a server; the status text and the error log may print a
    timestamp a second apart), else timestamp and process ids."""
    at, ids = dl.identity
    if ids and all(ids):
        return "trx:" + ",".join(str(i) for i in ids)
    parts = [str(i) if i is not None else f"p{t.thread_id}" for i, t in zip(ids, dl.transactions)]
    return f"{at}|{','.join(parts)}"


def status_section(text: str) -> InnodbStatusSection:
    st = parse_status(text)
    trxs = sorted(
        (t for t in st.transactions if t.active_seconds is not None),
        key=lambda t: -(t.active_seconds or 0),
    )[:OLDEST_KEPT]
    return InnodbStatusSection(
        at=st.at,
        truncated=st.truncated,
        history_list_length=st.history_list_length,
        deadlock=deadlock_record(st.deadlock) if st.deadlock else None,
        oldest_transactions=tuple(replace(t, query=(t.query or "")[:1024]) for t in trxs),
    )


ERROR_LOG_WINDOW = 86_400  # seconds of performance_schema.error_log read per look


def error_log_deadlocks(conn: Connection) -> ErrorLogDeadlocks:
    """MySQL 8.0.22+: every deadlock in performance_schema.error_log (no file access needed).
    Untested live: no MySQL 8 server here; the row shape follows the manual."""
    from ..deadlocks.perfschema import deadlocks_from_rows

    if not conn.version.at_least("mysql", 8, 0, 22):
        return ErrorLogDeadlocks(available=False)
    try:
        rows = conn.rows(sql("mysql", "error_log_deadlocks", conn.version), (ERROR_LOG_WINDOW,))
    except Exception as exc:  # noqa: BLE001 - optional source: say why, keep the status probe
        return ErrorLogDeadlocks(
            available=False,
            error=f"{type(exc).__name__}: {str(exc)[:200]}",
            grant="GRANT SELECT ON performance_schema.error_log TO '<monitor>'@'%';",
        )
    found = tuple(deadlock_record(d) for d in deadlocks_from_rows(rows))
    return ErrorLogDeadlocks(available=True, deadlocks=found)


@probe("my.innodb_status", "mysql", grant=PROCESS_GRANT, server_wide=True)
def innodb_status(conn: Connection) -> InnodbStatusSection:
    rows = conn.rows(sql("mysql", "innodb_status", conn.version))
    text = to_str(as_row(rows[0]).get("status")) if rows else ""
    return replace(status_section(text), error_log=error_log_deadlocks(conn))


@probe("my.innodb_counters", "mysql", server_wide=True)
def innodb_counters(conn: Connection) -> InnodbCounters:
    values: dict[str, int | None] = {}
    for r in map(as_row, conn.rows(sql("mysql", "innodb_counters", conn.version))):
        values[to_str(r.get("name")).lower()] = opt_int(r.get("value"))
    return InnodbCounters(
        deadlocks=values.get("innodb_deadlocks"),
        history_list_length=values.get("innodb_history_list_length"),
    )
