"""Queue-table probes (both engines): one catalog query finds the queue tables of the target's
scope by shape, then a few bounded, lock-free queries per table read backlog, reservations,
repeated attempts and failures. Catalog names are data: every identifier is composed by the
driver's quoting at the last step (psycopg.sql / backticks), in one pass; values are bound.
What a cycle cannot reach (cap, time budget) is a DW002 gap; the daemon rotates through all.
"""

from __future__ import annotations

import logging
import time
from functools import cache
from math import gcd

from ..errors import ProbeError
from ..frozen import frozen
from ..queues import (
    CATALOG_COLUMNS,
    MARKER_COLUMNS,
    QUEUE_TABLE_NAMES,
    SHAPES,
    attempts_limit,
    library,
    recognise,
    sibling_names,
)
from ..queues.roles import CORE_COLUMNS, QUEUE_WORDS_PATTERN
from ..snapshot import CoverageGap
from ..snapshot.values import Row, as_row, opt_int, to_bool, to_str
from ..targets import Connection
from ..targets.quoting import pg_text_array
from . import queue_pg_boss
from .queue_generic import probe_generic
from .queue_shape import (
    MY_CATALOG_ROWS,
    PG_CATALOG_ROWS,
    GenericTable,
    columns_of,
    generic_tables,
    my_candidates,
    question,
)
from .queue_sql import compose, qualified
from .registry import probe
from .results import Covered, PartialResult, jsonable
from .share import ProbeCache, catalog_cached
from .sqlfiles import SQL_DIR, _sql_variants, sql

log = logging.getLogger(__name__)

MAX_TABLES = 20  # queue tables probed per cycle; the rest are DW002 gaps (daemon: rotated)
BUDGET = 3.0  # seconds of queue-table queries per cycle; tables past it are DW002 gaps
ROTATION = "queues.rotation"  # ProbeCache key: the daemon's cursor and last results per table
WINDOW = 50_000  # jobs rows read per table: the oldest by id
# Kinds whose window is smaller (engine, kind) -> rows: Symfony's messages on MySQL/MariaDB are
# read through the `queue_name` index with a clustered-key lookup per row (its wide body
# beside): 50,000 cost 130-190 ms of the server at a 1 M backlog, 20,000 45-106 ms cold (as the
# machine's speed went), 10,000 half that; depth_warning (10,000: a count >= it warns) stays
# exact, a fuller window is scaled from the estimate (~) (contrib/bench/RESULTS-fleet.md §13)
KIND_WINDOW = {("mysql", "symfony_messenger"): 10_000}
# and for the newest failures: Laravel's failed_jobs holds each failure's whole stack trace
# (`(string) $e`, ~12 kB in the queue bench). InnoDB reads an off-page text whole, however little
# of it is asked for, from disk when cold (O_DIRECT): 500 / 1,000 / 2,000 / 10,000 rows cost
# 60 / 115-123 / 201 / 1,108 ms cold, 8-11 / 15 / 37 / 654 warm. PostgreSQL reads a TOAST slice,
# one chunk a row: 5,000 rows 48 ms, 20,000 200-240. QU004 warns from 1 failure and is critical
# from 50; a full window is said as `at least N` (contrib/bench/RESULTS-fleet.md §15). Solid
# Queue's failed executions hold Rails' whole backtrace in `error`, each read with a job lookup:
# 5,000 cost 147-163 ms on either engine (~30 us a row)
KIND_FAILED_WINDOW = {
    ("mysql", "laravel_failed"): 500,
    ("postgresql", "laravel_failed"): 5_000,
    ("mysql", "solid_queue"): 1_000,
    ("postgresql", "solid_queue"): 1_000,
}
# Kinds whose failures live among their jobs read a window of ids, not of failures (a smaller one
# would hide failures behind a busy backlog): there the failures whose text is read are capped
# instead, the newest first. Delayed::Job's `last_error` holds the message and the backtrace:
# 5,000 cost 124-182 ms on MySQL/MariaDB (each read whole from off-page), 54-86 ms on
# PostgreSQL (a TOAST slice and the handler each); RESULTS-fleet §15. Symfony's failure
# transport keeps each failed envelope (PhpSerializer: its ErrorDetailsStamp holds the
# FlattenException, trace and all, ~9 kB) among the messages. Found by character position, the
# stamp and the message class had cost 282 ms on PostgreSQL and 322 ms on MariaDB for 2,000; by
# byte search now, 1,000 cost 36-45 ms on MariaDB, 82-118 on PostgreSQL (its slices of the
# envelope still count characters), so 500 there
KIND_FAILED_TEXT_ROWS = {
    ("mysql", "delayed_job"): 1_000,
    ("postgresql", "delayed_job"): 2_000,
    ("mysql", "symfony_messenger"): 1_000,
    ("postgresql", "symfony_messenger"): 500,
}
FAILED_WINDOW = 20_000  # failure rows read per table: the newest by id (their text is read)
GROUPS = 500  # grouped rows returned per query
# Que: partial indexes (que_poll_idx) larger than this hold far more unfinished jobs than the
# window (~150,000 entries): its queries walk the primary key without counting them first (the
# count is a bitmap of the whole index before ANALYZE: queue_que_summary.sql)
POLL_BYTES = 8 << 20
NEWEST_STEP = 1_000  # rows per index read of the walk down a key (queue_newest_keys)
# Solid Queue's repeated attempts: executions read per kind (ready, scheduled), each one a job
# lookup for its serialized "executions": a smaller window than WINDOW (QU003 says so)
LOOKUPS = 10_000
LOOKUP_KINDS = {"solid_queue"}
# MySQL/MariaDB kinds whose repeated attempts are read from each row's text (Symfony's
# RedeliveryStamp in body/headers) over LOOKUPS rows, not WINDOW (QU003 says so)
MY_LOOKUP_KINDS = {"symfony_messenger"}
HORIZON = 7 * 86400  # failures older than this are not read
ASPECTS = ("summary", "reserved", "repeated", "failed", "locks")
CANONICAL = QUEUE_TABLE_NAMES  # the libraries' default names: probed first within a cap
ATTEMPT_COLUMNS = ("attempts", "attempt", "error_count", "executions_count", "retry_count")
# MySQL/MariaDB kinds whose queries read constant primary-key id ranges (integer ids, wide rows)
ID_RANGE_KINDS = {"laravel_jobs", "laravel_failed", "delayed_job", "symfony_messenger"}
# PostgreSQL kinds read the same way: no index serves their filter (Delayed::Job's failed_at), so
# a constant id range keeps the plan an index range scan before ANALYZE as after
PG_ID_RANGE_KINDS = {"delayed_job"}
# MySQL/MariaDB kinds read as the newest WINDOW rows by their key (string keys, no index for the
# filter): the table's row estimate past the window sets window_capped_ids
MY_NEWEST_KINDS = {"laravel_batches"}
# PostgreSQL kinds read the same way (newest WINDOW / FAILED_WINDOW by key) as constant key
# ranges found by a stepped walk down the key (queue_newest_keys): a key past the window sets
# window_capped_ids
PG_NEWEST_KINDS = {"laravel_batches"}
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


@frozen
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
    variant: str | None = None  # the client/version read from column types (Oban)
    fragments: tuple[tuple[str, str], ...] = ()  # the variant's SQL fragments

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
            "variant": self.variant,
        }


def discover(conn: Connection, engine: str) -> list[Discovered]:
    """Queue tables in the target's scope, recognised by columns, from one catalog query.
    MySQL/MariaDB: only the URL's database (spec.scoped_database; None = every schema);
    PostgreSQL: a connection is one database already."""
    return discover_all(conn, engine)[0]


def discover_all(conn: Connection, engine: str) -> tuple[list[Discovered], bool]:
    """discover() plus whether the catalog read hit its row cap (a DW002 gap)."""
    found, capped, _ = discover_tables(conn, engine)
    return found, capped


@cache
def _pg_marker_arrays() -> dict[str, str]:
    """The marker lists as array literals, built once (targets.quoting.pg_text_array: a list
    parameter of 200 names was dumped name by name, 3 ms of a first look's CPU)."""
    return {
        "markers": pg_text_array(CATALOG_COLUMNS),
        "library": pg_text_array(MARKER_COLUMNS),
        "core": pg_text_array(CORE_COLUMNS),
    }


def discover_tables(
    conn: Connection, engine: str
) -> tuple[list[Discovered], bool, list[GenericTable]]:
    """The library tables, the cap flag, and the tables only the queue model reads (by shape:
    queues and questions), all from the one catalog query."""
    capped = False
    rows: list[Row]
    if engine == "postgresql":
        text = sql(engine, "queue_tables", conn.version)
        params = {**_pg_marker_arrays(), "name_pattern": QUEUE_WORDS_PATTERN}
        rows = [as_row(r) for r in conn.rows(text, params)]
        capped = len(rows) >= PG_CATALOG_ROWS
    else:
        rows, capped = my_candidates(conn)
    out = []
    unknown: list[Row] = []
    for r in rows:
        cols = columns_of(r.get("columns"))
        name = to_str(r.get("table_name"))
        shape = recognise(cols, engine, name)
        if shape is None:
            unknown.append(r)  # columns as the catalog spells them (quoted camelCase stays)
            continue
        ctype = next((cols[c] for c in ATTEMPT_COLUMNS if cols.get(c)), None)
        lib = library(shape.library)
        variant = lib.variant(cols) if lib is not None and lib.variant is not None else None
        frags = dict(variant.fragments) if variant else {}
        if lib is not None and lib.fragments is not None:
            frags |= lib.fragments(cols)
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
                variant=variant.name if variant else None,
                fragments=tuple(frags.items()),
            )
        )
    # Within a cycle's cap, the connected database and the libraries' default names first:
    # those are the live queues; prefixed copies come after (and are rotated in by the daemon).
    out.sort(key=lambda t: (not t.current, t.table not in CANONICAL))
    return out, capped, generic_tables(conn, engine, unknown)


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
    frags |= dict(t.fragments)
    return compose(engine, text, idents, frags)


def _family(engine: str, kind: str) -> tuple[str, str]:
    """The KIND_WINDOW / KIND_FAILED_WINDOW / KIND_FAILED_TEXT_ROWS key: MySQL and MariaDB
    read alike."""
    return ("postgresql" if engine == "postgresql" else "mysql", kind)


def window_for(engine: str, kind: str) -> int:
    """Rows of the oldest-rows window for this engine and kind (WINDOW unless KIND_WINDOW)."""
    return KIND_WINDOW.get(_family(engine, kind), WINDOW)


def failed_window_for(engine: str, kind: str) -> int:
    """Rows of the newest-failures window (FAILED_WINDOW unless KIND_FAILED_WINDOW)."""
    return KIND_FAILED_WINDOW.get(_family(engine, kind), FAILED_WINDOW)


def failed_text_rows_for(engine: str, kind: str) -> int:
    """Failures whose text is read (the newest of the failed window; KIND_FAILED_TEXT_ROWS)."""
    return KIND_FAILED_TEXT_ROWS.get(_family(engine, kind), failed_window_for(engine, kind))


def _bounds(
    conn: Connection, t: Discovered, window: int = WINDOW, failed_window: int = FAILED_WINDOW
) -> dict[str, object]:
    """Id windows as constants, so every query is a primary-key range of at most `window`
    (oldest) or `failed_window` (newest) ids; gaps only make a window hold fewer."""
    text = _render(sql(conn.engine, "queue_bounds", conn.version), conn.engine, t)
    row = as_row(conn.rows(text, {"window": window})[0])
    lo, hi = opt_int(row.get("lo")) or 0, opt_int(row.get("hi")) or 0
    return {
        "lo": lo,
        "hi": hi,
        "max_id": lo + window - 1,
        "min_id": max(hi - failed_window + 1, 0),
        "beyond_window": hi > lo + window - 1,
    }


def _pg_newest_keys(conn: Connection, t: Discovered) -> dict[str, object]:
    """The constant key range of the newest WINDOW (lo_key, hi_key] and FAILED_WINDOW
    (failed_lo_key, hi_key] rows by primary key, and whether rows lie past the window."""
    step = min(NEWEST_STEP, gcd(WINDOW, FAILED_WINDOW))
    text = _render(sql("postgresql", "queue_newest_keys", conn.version), "postgresql", t)
    rows = conn.rows(
        text,
        {
            "window": WINDOW,
            "failed_window": FAILED_WINDOW,
            "step": step,
            "last": max(WINDOW, FAILED_WINDOW) + 1,
        },
    )
    row = as_row(rows[0]) if rows else {}
    keys = {k: row.get(k) for k in ("hi_key", "lo_key", "failed_lo_key")}
    return {**keys, "beyond_window": keys["lo_key"] is not None}


def _rows(value: object) -> list[dict[str, object]]:
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


def _refused(t: Discovered, exc: ProbeError) -> dict[str, object]:
    return {
        "error": f"{t.key}: {exc.detail}",
        "privilege": exc.privilege or "denied" in exc.detail.lower(),
    }


def probe_table(conn: Connection, engine: str, t: Discovered) -> dict[str, object]:
    """The bounded queries of one table; a failed query fills `error` and stops this table."""
    window, failed_window = window_for(engine, t.kind), failed_window_for(engine, t.kind)
    text_rows = failed_text_rows_for(engine, t.kind)
    params: dict[str, object] = {
        "window": window,
        "groups": GROUPS,
        "horizon": HORIZON,
        "lookups": LOOKUPS,
        "poll_bytes": POLL_BYTES,
        "text_rows": text_rows,
    }
    out = dict(
        t.as_dict(),
        window=window,
        failed_window=min(failed_window, text_rows),  # QU004's "full": at least this many
        groups=GROUPS,
        horizon=HORIZON,
        error=None,
        privilege=False,
        examined_at=time.time(),
    )
    if t.kind in LOOKUP_KINDS or (engine != "postgresql" and t.kind in MY_LOOKUP_KINDS):
        out["repeated_window"] = LOOKUPS
    try:
        if engine == "postgresql" and t.kind in PG_ID_RANGE_KINDS:
            params |= _bounds(conn, t)
            out["window_capped_ids"] = params.pop("beyond_window")
        if engine == "postgresql" and t.kind in PG_NEWEST_KINDS:
            params |= _pg_newest_keys(conn, t)
            out["window_capped_ids"] = params.pop("beyond_window")
        if engine != "postgresql":
            if t.kind in ID_RANGE_KINDS:
                params |= _bounds(conn, t, window, failed_window)
                out["window_capped_ids"] = params.pop("beyond_window")
            est = conn.rows(
                sql("mysql", "queue_estimate", conn.version),
                {"schema": t.schema, "table": t.table},
            )
            out["rows_estimate"] = _estimate(as_row(est[0]).get("rows_estimate") if est else None)
            if t.kind in MY_NEWEST_KINDS:  # the window is the newest rows: more past it?
                out["window_capped_ids"] = (opt_int(out["rows_estimate"]) or 0) > window
    except ProbeError as exc:
        return out | _refused(t, exc)
    swept = engine == "postgresql" and queue_pg_boss.applies(t)  # pg-boss 10/11: one pass
    for aspect in ASPECTS:
        name = f"queue_{t.kind}_{aspect}"
        if not _has_sql(engine, name) or (swept and aspect in queue_pg_boss.SWEPT):
            continue
        text = _render(sql(engine, name, conn.version), engine, t)
        params["window"] = failed_window if aspect == "failed" else window
        try:
            out[aspect] = [jsonable(r) for r in conn.rows(text, params)]
        except ProbeError as exc:
            return out | _refused(t, exc)
    if swept:
        text = sql(engine, "queue_pg_boss_sweep", conn.version)
        params |= {"window": WINDOW, "failed_window": FAILED_WINDOW}
        try:
            got = queue_pg_boss.sweep(
                conn, t, lambda x: _render(text, engine, x), params, _rows(out.get("repeated"))
            )
        except ProbeError as exc:  # repeated lacks its active share: unknown, not low
            return {k: v for k, v in out.items() if k != "repeated"} | _refused(t, exc)
        out |= {k: [jsonable(r) for r in v] if isinstance(v, list) else v for k, v in got.items()}
    return out


@frozen
class Rotation:
    """The daemon's place in the queue tables (kept in its ProbeCache between cycles): the
    next table to examine and the last result of each table, reused while it waits its turn."""

    cursor: int = 0
    results: tuple[tuple[str, dict[str, object]], ...] = ()


Item = Discovered | GenericTable


def _schedule(found: list[Item], state: Rotation | None) -> list[Item]:
    """This cycle's order: from the daemon's rotation cursor on, wrapping around."""
    if not state or not found:
        return found
    start = state.cursor % len(found)
    return found[start:] + found[:start]


def _probe(conn: Connection, engine: str, t: Item, gaps: list[CoverageGap]) -> dict[str, object]:
    if isinstance(t, Discovered):
        return probe_table(conn, engine, t)
    base: dict[str, object] = {
        "schema": t.schema,
        "table": t.table,
        "rows_estimate": t.rows_estimate,
        "current": t.current,
        "horizon": HORIZON,
        "error": None,
        "privilege": False,
        "examined_at": time.time(),
    }
    out, own = probe_generic(conn, engine, t, base)
    gaps += own
    return out | {"gaps": [g.__dict__ for g in own]} if out else {}


def collect(conn: Connection, cache: ProbeCache | None = None) -> object:
    engine = conn.engine
    # jit is off for the whole session from its start (targets.postgres), not SET per cycle
    known, catalog_capped, generic = catalog_cached(
        "queue_tables", lambda: discover_tables(conn, engine)
    )
    kept: object = cache.get(ROTATION, float("inf")) if cache is not None else None
    carried = isinstance(kept, Rotation) and bool(kept.results or kept.cursor)
    if not known and not generic and not catalog_capped and not carried:
        # no queue table and no rotation to carry (an idle database's every cycle): what
        # the walk below gives for nothing found, without walking
        return _none_found(engine, conn.spec)
    gaps: list[CoverageGap] = [question(g, None) for g in generic if g.reading.verdict != "queue"]
    found: list[Item] = [*known, *(g for g in generic if g.reading.verdict == "queue")]
    state = kept if isinstance(kept, Rotation) else Rotation()
    last_results = dict(state.results)
    deadline = time.monotonic() + BUDGET
    probed: list[tuple[Item, dict[str, object]]] = []
    if catalog_capped:
        gaps.append(
            CoverageGap(
                "queue_table",
                "information_schema.COLUMNS" if engine != "postgresql" else "pg_attribute",
                f"the queue-table catalog read stopped at "
                f"{MY_CATALOG_ROWS if engine != 'postgresql' else PG_CATALOG_ROWS} rows: "
                "queue tables beyond it were not found; scope the target to one database",
            )
        )
    reused: list[dict[str, object]] = []
    for t in _schedule(found, state if cache is not None else None):
        if len(probed) < MAX_TABLES and time.monotonic() < deadline:
            result = _probe(conn, engine, t, gaps)
            if result:  # empty: the generic model found its status values are not a queue's
                probed.append((t, result))
            continue
        why = (
            f"past the cap of {MAX_TABLES} queue tables per cycle"
            if len(probed) >= MAX_TABLES
            else f"past the {BUDGET:g} s time budget for queue tables"
        )
        last = last_results.get(t.key)
        if last is not None:  # the daemon examined it in an earlier cycle of the rotation
            reused.append(dict(last, reused=True))
            gaps += [CoverageGap(**g) for g in _gap_dicts(last)]
            continue
        lib = t.library if isinstance(t, Discovered) else "generic queue"
        gaps.append(
            CoverageGap(
                "queue_table",
                t.key,
                f"{lib} table not examined this run: {why}; "
                + (
                    "the daemon covers it in a later cycle"
                    if cache is not None
                    else "audit with a narrower scope (a URL naming one database) or run "
                    "the daemon, which rotates through every queue table"
                ),
            )
        )
    if cache is not None and (found or state.results or state.cursor):
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
        "skipped": [g.name for g in gaps if g.kind == "queue_table"][:100],
        "retry_after": getattr(conn.spec, "retry_after", None),
        "libraries": list(_libraries()),
    }
    failed = [(t, r) for t, r in probed if r["error"]]
    if not failed:
        return Covered(data, tuple(gaps)) if gaps else data
    denied = [t for t, r in failed if r["privilege"]]
    grant = " ".join(_grant(engine, t) for t in denied[:5])
    message = "; ".join(f"{r['error']} (QU001-QU004 unknown for {t.key})" for t, r in failed[:3])
    if len(failed) > 3:
        message += f" (and {len(failed) - 3} more tables)"
    fix = None if denied else UNREADABLE_FIX
    partial = PartialResult(data, message, grant or None, privilege=bool(denied), fix=fix)
    return Covered(partial, tuple(gaps)) if gaps else partial


def _none_found(engine: str, spec: object) -> dict[str, object]:
    """collect's data when the catalog has no queue table (and none is capped): nothing
    examined, nothing skipped."""
    return {
        "tables": [],
        "discovered": 0,
        "probed": 0,
        "max_tables": MAX_TABLES,
        "scope": getattr(spec, "scoped_database", None) if engine != "postgresql" else None,
        "skipped": [],
        "retry_after": getattr(spec, "retry_after", None),
        "libraries": list(_libraries()),
    }


@cache
def _libraries() -> tuple[str, ...]:
    """The libraries whose shapes are known, sorted (once: SHAPES is fixed)."""
    return tuple(sorted({s.library for s in SHAPES}))


UNREADABLE_FIX = (
    "Not a privilege: dbwatch could not read this queue table's layout (the error names the "
    "table and why); the other queue tables were read. Report it with the table's definition "
    "(psql \\d <table> / SHOW CREATE TABLE) so its layout is learned."
)


def _gap_dicts(result: dict[str, object]) -> list[dict[str, str]]:
    raw = result.get("gaps")
    if not isinstance(raw, list):
        return []
    return [{k: str(v) for k, v in g.items()} for g in raw if isinstance(g, dict)]


def _grant(engine: str, t: Item) -> str:
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
