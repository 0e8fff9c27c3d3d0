"""PostgreSQL MVCC probes: who holds the xmin horizon (instance-wide, plus standby/primary
peers), dead tuples per table (each configured database), and deadlock counters.

Extra sessions (other databases, a standby's primary) are opened one at a time and closed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import ProbeError, TargetError
from ..targets import Connection, TargetSpec, open_target, spec_for
from . import PartialResult, jsonable, probe, sql

log = logging.getLogger(__name__)
MONITOR_GRANT = "GRANT pg_monitor TO <monitor_user>;"
HOLDER_LIMIT = 50
DEAD_LIMIT = 100
DEAD_MIN = 1
MAX_DATABASES = 50
# Table names of the common job-queue libraries (Laravel's `jobs` is also found by shape).
QUEUE_NAMES = [
    "jobs",
    "que_jobs",
    "good_jobs",
    "delayed_jobs",
    "oban_jobs",
    "river_job",
    "job_queue",
    "pgboss_job",
    "graphile_jobs",
    "procrastinate_jobs",
    "failed_jobs",
]
# Also any name with job(s)/queue(s) as a word: solid_queue_ready_executions, que_jobs_2024.
QUEUE_PATTERN = r"(^|_)(jobs?|queues?)(_|$)"


def _rows(
    conn: Connection, name: str, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return [jsonable(r) for r in conn.rows(sql("postgresql", name, conn.version), params)]


def _target_config(config: Any, name: str) -> Any:
    for t in getattr(config, "targets", ()) or ():
        if t.name == name:
            return t
    return None


@contextmanager
def _session(spec: TargetSpec, database: str | None = None) -> Iterator[Connection]:
    conn = open_target(spec, database)
    try:
        yield conn
    finally:
        conn.close()


def _instance(conn: Connection) -> dict[str, Any]:
    row = _rows(conn, "horizon_instance")[0]
    row["application_name"] = receiver_app_name(
        row.get("receiver_conninfo"), row.get("cluster_name")
    )
    return row


def receiver_app_name(conninfo: str | None, cluster_name: str | None) -> str:
    """The application_name a standby's WAL receiver shows in the primary's pg_stat_replication."""
    for key in ("application_name", "fallback_application_name"):
        m = re.search(rf"(?:^|\s){key}=('(?:[^'\\]|\\.)*'|\S+)", conninfo or "")
        if m:
            return m.group(1).strip("'")
    return cluster_name or "walreceiver"


def _standby_view(conn: Connection) -> dict[str, Any]:
    """What a standby tells about itself: its WAL receiver and its oldest snapshots."""
    return {"instance": _instance(conn), "backends": _rows(conn, "horizon_backends", {"limit": 10})}


def _primary_view(conn: Connection) -> dict[str, Any]:
    return {
        "replication": _rows(conn, "horizon_replication", {"limit": HOLDER_LIMIT}),
        "slots": _rows(conn, "horizon_slots", {"limit": HOLDER_LIMIT}),
    }


def _peer(config: Any, name: str, fetch: Any) -> dict[str, Any]:
    """One configured peer target, read through one short session; errors are data."""
    tc = _target_config(config, name)
    out: dict[str, Any] = {"target": name, "error": None}
    if tc is None:
        out["error"] = f"no configured target named {name!r}"
        return out
    try:
        with _session(spec_for(tc.url, tc.name)) as peer:
            out.update(fetch(peer))
    except (TargetError, ProbeError) as exc:
        out["error"] = str(exc)
    return out


@probe("pg.horizon", "postgresql", grant=MONITOR_GRANT, with_config=True)
def horizon(conn: Connection, config: Any = None) -> Any:
    """Every kind of horizon holder, once per target (the horizon is per instance)."""
    data: dict[str, Any] = {"instance": _instance(conn)}
    data["backends"] = _rows(conn, "horizon_backends", {"limit": HOLDER_LIMIT})
    data["prepared"] = _rows(conn, "horizon_prepared", {"limit": HOLDER_LIMIT})
    data["slots"] = _rows(conn, "horizon_slots", {"limit": HOLDER_LIMIT})
    data["replication"] = _rows(conn, "horizon_replication", {"limit": HOLDER_LIMIT})
    data["primary"], data["standbys"] = None, []
    me = _target_config(config, conn.spec.name)
    if data["instance"]["in_recovery"]:
        if me is not None and me.primary:
            data["primary"] = _peer(config, me.primary, _primary_view)
    else:
        for peer in getattr(config, "targets", ()) or ():
            if peer.primary == conn.spec.name:
                data["standbys"].append(_peer(config, peer.name, _standby_view))
    hidden = sum(1 for r in data["backends"] if r.get("query") == "<insufficient privilege>")
    if hidden:
        return PartialResult(
            data, f"{hidden} horizon holders of other users are hidden", MONITOR_GRANT
        )
    return data


def databases_for(conn: Connection, config: Any) -> list[str]:
    """The connected database first, then those the target's config names (or all)."""
    current = getattr(conn, "database", None) or ""
    tc = _target_config(config, conn.spec.name)
    names: list[str] = []
    if tc is not None and tc.all_databases:
        names = [
            r["database"] for r in _rows(conn, "connectable_databases", {"limit": MAX_DATABASES})
        ]
    elif tc is not None:
        names = list(tc.databases)
    return [current] + [n for n in dict.fromkeys(names) if n != current][:MAX_DATABASES]


def dead_tuple_rows(conn: Connection) -> list[dict[str, Any]]:
    return _rows(
        conn,
        "dead_tuples",
        {
            "queue_names": QUEUE_NAMES,
            "queue_pattern": QUEUE_PATTERN,
            "min_dead": DEAD_MIN,
            "limit": DEAD_LIMIT,
        },
    )


@probe("pg.dead_tuples", "postgresql", with_config=True)
def dead_tuples(conn: Connection, config: Any = None) -> Any:
    """Per database (pg_stat_user_tables is per database): one bounded query each, sequentially."""
    tables = dead_tuple_rows(conn)
    dbs = databases_for(conn, config)
    done, errors = [dbs[0]], []
    for name in dbs[1:]:
        try:
            with _session(conn.spec, name) as other:
                tables += dead_tuple_rows(other)
            done.append(name)
        except (TargetError, ProbeError) as exc:
            errors.append(f"{name}: {exc}")
    data = {"databases": done, "tables": tables}
    if errors:
        return PartialResult(
            data,
            "dead tuples not read in " + "; ".join(errors),
            "GRANT CONNECT ON DATABASE <db> TO <monitor_user>;",
        )
    return data


@probe("pg.deadlocks", "postgresql")
def deadlocks(conn: Connection) -> Any:
    return _rows(conn, "deadlocks", {"limit": 1000})
