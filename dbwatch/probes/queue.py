"""Queue-table probes (both engines): one catalog query finds the queue tables by shape, then
a few bounded, lock-free queries per table (capped per cycle) read backlog, reservations,
repeated attempts and failures. Identifiers come from the catalog and are quoted; values bound.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import ProbeError
from ..queues import MARKER_COLUMNS, SHAPES, attempts_limit, recognise, sibling_names
from ..targets import Connection
from . import PartialResult, _sql_variants, jsonable, probe, sql

log = logging.getLogger(__name__)

MAX_TABLES = 20  # queue tables probed per cycle; the rest are listed as skipped
WINDOW = 50_000  # jobs rows read per table: the oldest by id
FAILED_WINDOW = 20_000  # failure rows read per table: the newest by id (their text is read)
GROUPS = 500  # grouped rows returned per query
HORIZON = 7 * 86400  # failures older than this are not read
ASPECTS = ("summary", "reserved", "repeated", "failed")
CANONICAL = {
    "jobs",
    "failed_jobs",
    "que_jobs",
    "good_jobs",
    "delayed_jobs",
    "oban_jobs",
    "river_job",
    "solid_queue_jobs",
    "_private_jobs",
    "job",
    "job_batches",
}
ATTEMPT_COLUMNS = ("attempts", "attempt", "error_count", "executions_count", "retry_count")
# MySQL/MariaDB kinds whose queries read constant primary-key id ranges (integer ids, wide rows)
ID_RANGE_KINDS = {"laravel_jobs", "laravel_failed", "delayed_job"}
# pg-boss keeps a job's expiry as an interval (10.x) or as seconds (11+)
EXPIRE_EXPR = {"expire_seconds": "expire_seconds", "expire_in": "extract(epoch FROM expire_in)"}
MY_GRANT = "GRANT SELECT ON {schema}.{table} TO '<monitor>'@'%';"
PG_GRANT = "GRANT SELECT ON {schema}.{table} TO <monitor_user>;"


def quote(engine: str, name: str) -> str:
    """An identifier from the catalog, quoted, with % doubled for the driver's paramstyle."""
    if engine == "postgresql":
        text = '"' + name.replace('"', '""') + '"'
    else:
        text = "`" + name.replace("`", "``") + "`"
    return text.replace("%", "%%")


def _columns(text: str | None) -> dict[str, str]:
    out = {}
    for item in str(text or "").split(","):
        name, _, ctype = item.strip().partition(" ")
        if name:
            out[name.lower()] = ctype.strip()
    return out


def discover(conn: Connection, engine: str) -> list[dict[str, Any]]:
    """Queue tables of this target, recognised by columns, from a single catalog query."""
    rows = conn.rows(
        sql(engine, "queue_tables", conn.version),
        {"markers": list(MARKER_COLUMNS) if engine == "postgresql" else tuple(MARKER_COLUMNS)},
    )
    out = []
    for r in map(jsonable, rows):
        cols = _columns(r.get("columns"))
        shape = recognise(cols, engine, r["table_name"])
        if shape is None:
            continue
        ctype = next((cols[c] for c in ATTEMPT_COLUMNS if cols.get(c)), None)
        out.append(
            {
                "schema": r["schema"],
                "table": r["table_name"],
                "kind": shape.kind,
                "library": shape.library,
                "rows_estimate": _estimate(r.get("rows_estimate")),
                "attempts_type": ctype,
                "attempts_limit": attempts_limit(ctype),
                "current": bool(r.get("current_db")),
                "scale_depth": shape.scale_depth,
                "siblings": sibling_names(shape, r["table_name"]),
                "expire": next((c for c in EXPIRE_EXPR if c in cols), None),
            }
        )
    # When more than MAX_TABLES match, probe the connected database and the libraries'
    # default names first: those are the live queues; prefixed copies come after.
    out.sort(key=lambda t: (not t["current"], t["table"] not in CANONICAL))
    return out


def _estimate(value: Any) -> int | None:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if n >= 0 else None  # PostgreSQL: -1 = never analysed


def _has_sql(engine: str, name: str) -> bool:
    return bool(_sql_variants(engine, name))


def _bounds(conn: Connection, table: str) -> dict[str, Any]:
    """MySQL/MariaDB: id windows as constants, so every query is a primary-key range of at
    most WINDOW (oldest) or FAILED_WINDOW (newest) ids; gaps only make a window hold fewer."""
    text = sql("mysql", "queue_bounds", conn.version).replace("{table}", table)
    row = conn.rows(text, {"window": WINDOW})[0]
    lo, hi = int(row.get("lo") or 0), int(row.get("hi") or 0)
    return {
        "max_id": lo + WINDOW - 1,
        "min_id": max(hi - FAILED_WINDOW + 1, 0),
        "beyond_window": hi > lo + WINDOW - 1,
    }


def _render(text: str, engine: str, t: dict[str, Any]) -> str:
    """Put the catalog's (quoted) table names and fixed fragments into a query's text."""
    text = text.replace("{table}", f"{quote(engine, t['schema'])}.{quote(engine, t['table'])}")
    for sib, name in (t.get("siblings") or {}).items():
        text = text.replace("{" + sib + "}", f"{quote(engine, t['schema'])}.{quote(engine, name)}")
    if t.get("expire"):
        text = text.replace("{expire}", EXPIRE_EXPR[t["expire"]])
    return text


def probe_table(conn: Connection, engine: str, t: dict[str, Any]) -> dict[str, Any]:
    """The bounded queries of one table; a failed query fills `error` and stops this table."""
    table = f"{quote(engine, t['schema'])}.{quote(engine, t['table'])}"
    params: dict[str, Any] = {"window": WINDOW, "groups": GROUPS, "horizon": HORIZON}
    out = dict(
        t,
        window=WINDOW,
        failed_window=FAILED_WINDOW,
        groups=GROUPS,
        horizon=HORIZON,
        error=None,
        privilege=False,
    )
    try:
        if engine != "postgresql":
            if t["kind"] in ID_RANGE_KINDS:
                params |= _bounds(conn, table)
                out["window_capped_ids"] = params.pop("beyond_window")
            est = conn.rows(
                sql("mysql", "queue_estimate", conn.version),
                {"schema": t["schema"], "table": t["table"]},
            )
            out["rows_estimate"] = _estimate(est[0].get("rows_estimate") if est else None)
    except ProbeError as exc:
        return out | {
            "error": f"{t['schema']}.{t['table']}: {exc.detail}",
            "privilege": exc.privilege or "denied" in exc.detail.lower(),
        }
    for aspect in ASPECTS:
        name = f"queue_{t['kind']}_{aspect}"
        if not _has_sql(engine, name):
            continue
        text = _render(sql(engine, name, conn.version), engine, t)
        params["window"] = FAILED_WINDOW if aspect == "failed" else WINDOW
        try:
            out[aspect] = [jsonable(r) for r in conn.rows(text, params)]
        except ProbeError as exc:
            out["error"] = f"{t['schema']}.{t['table']}: {exc.detail}"
            out["privilege"] = exc.privilege or "denied" in exc.detail.lower()
            break
    return out


def collect(conn: Connection) -> Any:
    engine = conn.engine
    found = discover(conn, engine)
    probed = [probe_table(conn, engine, t) for t in found[:MAX_TABLES]]
    data = {
        "tables": probed,
        "discovered": len(found),
        "probed": len(probed),
        "max_tables": MAX_TABLES,
        "skipped": [f"{t['schema']}.{t['table']}" for t in found[MAX_TABLES:]][:100],
        "retry_after": getattr(conn.spec, "retry_after", None),
        "libraries": sorted({s.library for s in SHAPES}),
    }
    failed = [t for t in probed if t["error"]]
    if not failed:
        return data
    template = PG_GRANT if engine == "postgresql" else MY_GRANT
    denied = [t for t in failed if t["privilege"]]
    grant = " ".join(template.format(schema=t["schema"], table=t["table"]) for t in denied[:5])
    message = "; ".join(t["error"] for t in failed[:3])
    if len(failed) > 3:
        message += f" (and {len(failed) - 3} more tables)"
    return PartialResult(data, message, grant or None)


@probe("pg.queues", "postgresql", grant="GRANT SELECT ON <queue tables> TO <monitor_user>;")
def pg_queues(conn: Connection) -> Any:
    return collect(conn)


@probe("my.queues", "mysql", grant="GRANT SELECT ON <db>.* TO '<monitor>'@'%';")
def my_queues(conn: Connection) -> Any:
    return collect(conn)
