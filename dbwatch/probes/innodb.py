"""InnoDB monitor probes: the status text (parsed here, kept JSON-able) and the counters."""

from __future__ import annotations

from typing import Any

from ..deadlocks.diagnosis import diagnose
from ..parsers.innodb_deadlock import Deadlock
from ..parsers.innodb_status import parse_status
from ..targets import Connection
from . import probe, sql

PROCESS_GRANT = "GRANT PROCESS ON *.* TO '<monitor>'@'%';"
OLDEST_KEPT = 20


def deadlock_record(dl: Deadlock) -> dict[str, Any]:
    """The SPEC §6 deadlock object with its diagnosis and a dedupe key."""
    out = dl.to_dict()
    out["diagnosis"] = diagnose(dl).to_dict()
    out["key"] = deadlock_key(dl)
    out["too_deep"] = dl.too_deep
    return out


def deadlock_key(dl: Deadlock) -> str:
    at, ids = dl.identity
    return f"{at}|{','.join(str(i) for i in ids)}"


def status_section(text: str) -> dict[str, Any]:
    st = parse_status(text)
    trxs = sorted(
        (t for t in st.transactions if t.active_seconds is not None),
        key=lambda t: -(t.active_seconds or 0),
    )[:OLDEST_KEPT]
    return {
        "at": st.at,
        "truncated": st.truncated,
        "history_list_length": st.history_list_length,
        "deadlock": deadlock_record(st.deadlock) if st.deadlock else None,
        "oldest_transactions": [
            {
                "trx_id": t.trx_id,
                "thread_id": t.thread_id,
                "user": t.user,
                "host": t.host,
                "active_seconds": t.active_seconds,
                "state": t.state,
                "query": (t.query or "")[:1024],
            }
            for t in trxs
        ],
    }


@probe("my.innodb_status", "mysql", grant=PROCESS_GRANT, server_wide=True)
def innodb_status(conn: Connection) -> Any:
    rows = conn.rows(sql("mysql", "innodb_status", conn.version))
    text = ""
    if rows:
        row = {k.lower(): v for k, v in rows[0].items()}
        raw = row.get("status", "")
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw or "")
    return status_section(text)


@probe("my.innodb_counters", "mysql", server_wide=True)
def innodb_counters(conn: Connection) -> Any:
    out: dict[str, Any] = {}
    for r in conn.rows(sql("mysql", "innodb_counters", conn.version)):
        try:
            out[str(r["name"]).lower()] = int(r["value"])
        except (TypeError, ValueError):
            continue
    return out
