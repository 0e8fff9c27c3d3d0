"""Queue-table probes (both engines): one catalog query finds the queue tables of the target's
scope by shape, then a few bounded, lock-free queries per table read backlog, reservations,
repeated attempts and failures. Catalog names are data: every identifier is composed by the
driver's quoting at the last step (psycopg.sql / backticks), in one pass; values are bound.
What a cycle cannot reach (cap, time budget) is a DW002 gap; the daemon rotates through all.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass

from psycopg import sql as pgsql

from ..errors import ProbeError
from ..queues import (
    MARKER_COLUMNS,
    QUEUE_TABLE_NAMES,
    SHAPES,
    attempts_limit,
    recognise,
    sibling_names,
)
from ..snapshot import CoverageGap
from ..snapshot.values import Row, as_row, opt_int, opt_str, to_bool, to_str
from ..targets import Connection
from ..targets.quoting import my_ident_for_format, pg_ident_text
from . import (
    SQL_DIR,
    Covered,
    PartialResult,
    ProbeCache,
    _sql_variants,
    catalog_cached,
    jsonable,
    probe,
    sql,
)

log = logging.getLogger(__name__)

MAX_TABLES = 20  # queue tables probed per cycle; the rest are DW002 gaps (daemon: rotated)
BUDGET = 3.0  # seconds of queue-table queries per cycle; tables past it are DW002 gaps
ROTATION = "queues.rotation"  # ProbeCache key: the daemon's cursor and last results per table
WINDOW = 50_000  # jobs rows read per table: the oldest by id
FAILED_WINDOW = 20_000  # failure rows read per table: the newest by id (their text is read)
GROUPS = 500  # grouped rows returned per query
HORIZON = 7 * 86400  # failures older than this are not read
ASPECTS = ("summary", "reserved", "repeated", "failed", "locks")
CANONICAL = QUEUE_TABLE_NAMES  # the libraries' default names: probed first within a cap
ATTEMPT_COLUMNS = ("attempts", "attempt", "error_count", "executions_count", "retry_count")
# MySQL/MariaDB kinds whose queries read constant primary-key id ranges (integer ids, wide rows)
ID_RANGE_KINDS = {"laravel_jobs", "laravel_failed", "delayed_job", "symfony_messenger"}
# pg-boss keeps a job's expiry as an interval (10.x) or as seconds (11+)
EXPIRE_EXPR = {"expire_seconds": "expire_seconds", "expire_in": "extract(epoch FROM expire_in)"}
# pg-boss 12: a job with heartbeat_seconds is failed once heartbeat_on is that old
HEARTBEAT_EXPR = {
    True: (
        "extract(epoch FROM now() - coalesce(heartbeat_on, started_on))::bigint",
        "heartbeat_seconds",
    ),
    False: ("NULL::bigint", "NULL::int"),
}


_PLACEHOLDER = re.compile(r"\{([a-z_]{1,40})\}")


def compose(
    engine: str, template: str, idents: dict[str, tuple[str, ...]], frags: dict[str, str]
) -> str:
    """The template with each {placeholder} replaced in ONE pass: catalog names quoted by the
    driver's own rules (psycopg.sql.Identifier / backticks, % doubled for the paramstyle),
    fixed fragments from this module. Inserted text is never scanned again, so a name holding
    '{tasks}', quotes or comment marks stays inside its quotes."""
    parts: list[pgsql.Composable] = []
    out: list[str] = []
    pos = 0
    for m in _PLACEHOLDER.finditer(template):
        key = m.group(1)
        if key not in idents and key not in frags:
            continue  # not ours (a regex quantifier, JSON in a comment): left as text
        chunk = template[pos : m.start()]
        pos = m.end()
        if engine == "postgresql":
            parts.append(pgsql.SQL(chunk))
            if key in idents:
                parts.append(pgsql.Identifier(*(p.replace("%", "%%") for p in idents[key])))
            else:
                parts.append(pgsql.SQL(frags[key]))
        else:
            out.append(chunk)
            out.append(my_ident_for_format(*idents[key]) if key in idents else frags[key])
    if engine == "postgresql":
        parts.append(pgsql.SQL(template[pos:]))
        return pgsql.Composed(parts).as_string(None)
    out.append(template[pos:])
    return "".join(out)


def qualified(engine: str, schema: str, table: str) -> str:
    """schema.table quoted for people (fixes, messages), the same rules as the queries."""
    if engine == "postgresql":
        return pg_ident_text(schema, table)
    return my_ident_for_format(schema, table).replace("%%", "%")


def _columns(text: str | None) -> dict[str, str]:
    out = {}
    for item in (text or "").split(","):
        name, _, ctype = item.strip().partition(" ")
        if name:
            out[name.lower()] = ctype.strip()
    return out


@dataclass(frozen=True)
class Discovered:
    """A queue table the catalog query found: where it is, which library's shape it has and
    how its queries are composed."""

    schema: str
    table: str
    kind: str
    library: str
    rows_estimate: int | None
    attempts_type: str | None
    attempts_limit: int | None
    current: bool
    scale_depth: bool
    siblings: dict[str, str]
    expire: str | None
    heartbeat: bool

    @property
    def key(self) -> str:
        return f"{self.schema}.{self.table}"

    def as_dict(self) -> dict[str, object]:
        """The table's entry in the section, before its aspects are read."""
        return {
            "schema": self.schema,
            "table": self.table,
            "kind": self.kind,
            "library": self.library,
            "rows_estimate": self.rows_estimate,
            "attempts_type": self.attempts_type,
            "attempts_limit": self.attempts_limit,
            "current": self.current,
            "scale_depth": self.scale_depth,
            "siblings": dict(self.siblings),
            "expire": self.expire,
            "heartbeat": self.heartbeat,
        }


def discover(conn: Connection, engine: str) -> list[Discovered]:
    """Queue tables in the target's scope, recognised by columns, from one catalog query.
    MySQL/MariaDB: only the URL's database (spec.scoped_database; None = every schema);
    PostgreSQL: a connection is one database already."""
    return discover_all(conn, engine)[0]


def discover_all(conn: Connection, engine: str) -> tuple[list[Discovered], bool]:
    """discover() plus whether the catalog read hit its row cap (a DW002 gap)."""
    capped = False
    rows: list[Row]
    if engine == "postgresql":
        text = sql(engine, "queue_tables", conn.version)
        rows = [as_row(r) for r in conn.rows(text, {"markers": list(MARKER_COLUMNS)})]
    else:
        rows, capped = _my_candidates(conn)
    out = []
    for r in rows:
        cols = _columns(opt_str(r.get("columns")))
        name = to_str(r.get("table_name"))
        shape = recognise(cols, engine, name)
        if shape is None:
            continue
        ctype = next((cols[c] for c in ATTEMPT_COLUMNS if cols.get(c)), None)
        out.append(
            Discovered(
                schema=to_str(r.get("schema")),
                table=name,
                kind=shape.kind,
                library=shape.library,
                rows_estimate=_estimate(r.get("rows_estimate")),
                attempts_type=ctype,
                attempts_limit=attempts_limit(ctype),
                current=to_bool(r.get("current_db")),
                scale_depth=shape.scale_depth,
                siblings=sibling_names(shape, name),
                expire=next((c for c in EXPIRE_EXPR if c in cols), None),
                heartbeat="heartbeat_seconds" in cols and "heartbeat_on" in cols,
            )
        )
    # Within a cycle's cap, the connected database and the libraries' default names first:
    # those are the live queues; prefixed copies come after (and are rotated in by the daemon).
    out.sort(key=lambda t: (not t.current, t.table not in CANONICAL))
    return out, capped


MY_CATALOG_ROWS = 50_000  # marker-column rows read from information_schema.COLUMNS


def _my_candidates(conn: Connection) -> tuple[list[Row], bool]:
    """MySQL/MariaDB: marker columns per table, grouped here (see queue_tables.sql for why),
    in the shape of PostgreSQL's catalog query: schema, table_name, columns, current_db."""
    schema = opt_str(getattr(conn.spec, "scoped_database", None))
    name = "queue_tables_scoped" if schema else "queue_tables"
    params: dict[str, object] = {"markers": tuple(MARKER_COLUMNS)}
    if schema:
        params["schema"] = schema
    current = schema or opt_str(getattr(conn.spec, "database", None))
    tables: dict[tuple[str, str], list[str]] = {}
    raw = conn.rows(sql("mysql", name, conn.version), params)
    for r in map(as_row, raw):
        key = (to_str(r.get("schema")), to_str(r.get("table_name")))
        column = f"{to_str(r.get('column_name'))} {to_str(r.get('column_type'))}"
        tables.setdefault(key, []).append(column)
    out: list[Row] = [
        {
            "schema": s,
            "table_name": t,
            "columns": ",".join(sorted(cols)),
            "current_db": s == current,
        }
        for (s, t), cols in tables.items()
        if len(cols) >= 6
    ]
    out.sort(key=lambda r: (not r["current_db"], str(r["schema"]), str(r["table_name"])))
    return out, len(raw) >= MY_CATALOG_ROWS


def _estimate(value: object) -> int | None:
    n = opt_int(value)
    return n if n is not None and n >= 0 else None  # PostgreSQL: -1 = never analysed


def _has_sql(engine: str, name: str) -> bool:
    return bool(_sql_variants(engine, name, SQL_DIR))


def _render(text: str, engine: str, t: Discovered) -> str:
    """The query with the catalog's table names (quoted) and fixed fragments composed in."""
    idents: dict[str, tuple[str, ...]] = {"table": (t.schema, t.table)}
    for sib, name in t.siblings.items():
        idents[sib] = (t.schema, name)
    frags = {"expire": EXPIRE_EXPR[t.expire]} if t.expire else {}
    frags["hb_age"], frags["hb_limit"] = HEARTBEAT_EXPR[t.heartbeat]
    return compose(engine, text, idents, frags)


def _bounds(conn: Connection, t: Discovered) -> dict[str, object]:
    """MySQL/MariaDB: id windows as constants, so every query is a primary-key range of at
    most WINDOW (oldest) or FAILED_WINDOW (newest) ids; gaps only make a window hold fewer."""
    text = _render(sql("mysql", "queue_bounds", conn.version), "mysql", t)
    row = as_row(conn.rows(text, {"window": WINDOW})[0])
    lo, hi = opt_int(row.get("lo")) or 0, opt_int(row.get("hi")) or 0
    return {
        "max_id": lo + WINDOW - 1,
        "min_id": max(hi - FAILED_WINDOW + 1, 0),
        "beyond_window": hi > lo + WINDOW - 1,
    }


def _refused(t: Discovered, exc: ProbeError) -> dict[str, object]:
    return {
        "error": f"{t.key}: {exc.detail}",
        "privilege": exc.privilege or "denied" in exc.detail.lower(),
    }


def probe_table(conn: Connection, engine: str, t: Discovered) -> dict[str, object]:
    """The bounded queries of one table; a failed query fills `error` and stops this table."""
    params: dict[str, object] = {"window": WINDOW, "groups": GROUPS, "horizon": HORIZON}
    out = dict(
        t.as_dict(),
        window=WINDOW,
        failed_window=FAILED_WINDOW,
        groups=GROUPS,
        horizon=HORIZON,
        error=None,
        privilege=False,
        examined_at=time.time(),
    )
    try:
        if engine != "postgresql":
            if t.kind in ID_RANGE_KINDS:
                params |= _bounds(conn, t)
                out["window_capped_ids"] = params.pop("beyond_window")
            est = conn.rows(
                sql("mysql", "queue_estimate", conn.version),
                {"schema": t.schema, "table": t.table},
            )
            out["rows_estimate"] = _estimate(as_row(est[0]).get("rows_estimate") if est else None)
    except ProbeError as exc:
        return out | _refused(t, exc)
    for aspect in ASPECTS:
        name = f"queue_{t.kind}_{aspect}"
        if not _has_sql(engine, name):
            continue
        text = _render(sql(engine, name, conn.version), engine, t)
        params["window"] = FAILED_WINDOW if aspect == "failed" else WINDOW
        try:
            out[aspect] = [jsonable(r) for r in conn.rows(text, params)]
        except ProbeError as exc:
            return out | _refused(t, exc)
    return out


@dataclass(frozen=True)
class Rotation:
    """The daemon's place in the queue tables (kept in its ProbeCache between cycles): the
    next table to examine and the last result of each table, reused while it waits its turn."""

    cursor: int = 0
    results: tuple[tuple[str, dict[str, object]], ...] = ()


def _schedule(found: list[Discovered], state: Rotation | None) -> list[Discovered]:
    """This cycle's order: from the daemon's rotation cursor on, wrapping around."""
    if not state or not found:
        return found
    start = state.cursor % len(found)
    return found[start:] + found[:start]


def collect(conn: Connection, cache: ProbeCache | None = None) -> object:
    engine = conn.engine
    # jit is off for the whole session from its start (targets.postgres), not SET per cycle
    found, catalog_capped = catalog_cached("queue_tables", lambda: discover_all(conn, engine))
    kept: object = cache.get(ROTATION, float("inf")) if cache is not None else None
    state = kept if isinstance(kept, Rotation) else Rotation()
    last_results = dict(state.results)
    deadline = time.monotonic() + BUDGET
    probed: list[tuple[Discovered, dict[str, object]]] = []
    gaps: list[CoverageGap] = []
    if catalog_capped:
        gaps.append(
            CoverageGap(
                "queue_table",
                "information_schema.COLUMNS",
                f"the queue-table catalog read stopped at {MY_CATALOG_ROWS} column rows: "
                "queue tables beyond it were not found; scope the target to one database",
            )
        )
    reused: list[dict[str, object]] = []
    for t in _schedule(found, state if cache is not None else None):
        if len(probed) < MAX_TABLES and time.monotonic() < deadline:
            probed.append((t, probe_table(conn, engine, t)))
            continue
        why = (
            f"past the cap of {MAX_TABLES} queue tables per cycle"
            if len(probed) >= MAX_TABLES
            else f"past the {BUDGET:g} s time budget for queue tables"
        )
        last = last_results.get(t.key)
        if last is not None:  # the daemon examined it in an earlier cycle of the rotation
            reused.append(dict(last, reused=True))
            continue
        gaps.append(
            CoverageGap(
                "queue_table",
                t.key,
                f"{t.library} table not examined this run: {why}; "
                + (
                    "the daemon covers it in a later cycle"
                    if cache is not None
                    else "audit with a narrower scope (a URL naming one database) or run "
                    "the daemon, which rotates through every queue table"
                ),
            )
        )
    if cache is not None:
        results = {t.key: r for t, r in probed if not r["error"]}
        keep = {t.key for t in found}
        results |= {k: v for k, v in last_results.items() if k in keep and k not in results}
        cursor = (state.cursor + len(probed)) % max(len(found), 1)
        cache.put(ROTATION, Rotation(cursor, tuple(results.items())))
    data: dict[str, object] = {
        "tables": [r for _, r in probed] + reused,
        "discovered": len(found),
        "probed": len(probed),
        "max_tables": MAX_TABLES,
        "scope": getattr(conn.spec, "scoped_database", None) if engine != "postgresql" else None,
        "skipped": [g.name for g in gaps][:100],
        "retry_after": getattr(conn.spec, "retry_after", None),
        "libraries": sorted({s.library for s in SHAPES}),
    }
    failed = [(t, r) for t, r in probed if r["error"]]
    if not failed:
        return Covered(data, tuple(gaps)) if gaps else data
    denied = [t for t, r in failed if r["privilege"]]
    grant = " ".join(_grant(engine, t) for t in denied[:5])
    message = "; ".join(str(r["error"]) for _, r in failed[:3])
    if len(failed) > 3:
        message += f" (and {len(failed) - 3} more tables)"
    partial = PartialResult(data, message, grant or None)
    return Covered(partial, tuple(gaps)) if gaps else partial


def _grant(engine: str, t: Discovered) -> str:
    name = qualified(engine, t.schema, t.table)
    if engine == "postgresql":
        return f"GRANT SELECT ON {name} TO <monitor_user>;"
    return f"GRANT SELECT ON {name} TO '<monitor>'@'%';"


@probe(
    "pg.queues",
    "postgresql",
    grant="GRANT SELECT ON <queue tables> TO <monitor_user>;",
    with_cache=True,
)
def pg_queues(conn: Connection, cache: ProbeCache | None = None) -> object:
    return collect(conn, cache)


@probe("my.queues", "mysql", grant="GRANT SELECT ON <db>.* TO '<monitor>'@'%';", with_cache=True)
def my_queues(conn: Connection, cache: ProbeCache | None = None) -> object:
    return collect(conn, cache)
