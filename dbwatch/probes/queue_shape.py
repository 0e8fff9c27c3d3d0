"""Recognition by shape for queue tables no library module knows: the catalog rows read by the
one queue model (queues/roles.py) into queues and questions, the libraries' own other tables
left out, the DW002 texts for what the model cannot judge (named table, roles, columns), and
MySQL/MariaDB's catalog rows grouped per table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace

from ..frozen import frozen
from ..queues import CATALOG_COLUMNS, MARKER_COLUMNS, library_family
from ..queues.recognition import Reading, recognise_shape
from ..queues.roles import CORE_COLUMNS, queue_named, type_kind
from ..queues.statuses import StatusMap
from ..snapshot import CoverageGap
from ..snapshot.values import Row, as_row, opt_int, opt_str, to_bool, to_str
from ..targets import Connection
from .sqlfiles import sql


@frozen
class GenericTable:
    """A table the shape recognition read as a queue (or a question): where, roles, types."""

    schema: str
    table: str
    reading: Reading
    types: dict[str, str]
    indexed: frozenset[str]
    rows_estimate: int | None
    current: bool

    @property
    def key(self) -> str:
        return f"{self.schema}.{self.table}"

    def order(self) -> str | None:
        """The column the windows are read by: an indexed job id, created-at or runnable-at."""
        roles = self.reading.roles
        job_id = roles.get("job_id")
        integer = job_id is not None and type_kind(self.types.get(job_id, "")) == "int"
        # an integer id grows with time; a uuid or text key does not (a last resort)
        for col in (
            job_id if integer else None,
            roles.get("created_at"),
            roles.get("runnable_at"),
            job_id,
        ):
            if col and col.lower() in self.indexed:
                return col
        return None


def enum_labels(ctype: str) -> tuple[str, ...]:
    t = ctype.strip()
    if not t.lower().startswith("enum("):
        return ()
    return tuple(v.replace("''", "'") for v in _ENUM_VALUE.findall(t))


_ENUM_VALUE = re.compile(r"'((?:[^']|'')*)'")


def _seen(g: GenericTable) -> str:
    cols = list(g.reading.columns)
    text = ", ".join(cols[:24])
    return text + (f" (+{len(cols) - 24})" if len(cols) > 24 else "")


def gap(g: GenericTable, missing: dict[str, str]) -> CoverageGap:
    """DW002 for a queue table the model reads only in part: what it could not judge and why."""
    what = ", ".join(k for k in ("backlog", "stuck", "failed") if k in missing) or "some rows"
    why = "; ".join(missing.values())
    return CoverageGap(
        "queue_unjudged",
        g.key,
        f"queue table read by its roles (generic model); {what} not judged: {why}; "
        f"columns seen: {_seen(g)}",
    )


def question(g: GenericTable, statuses: StatusMap | None, why: str = "") -> CoverageGap:
    """DW002 for a table that looks like a queue without enough to judge it as one."""
    roles = ", ".join(f"{r}={c}" for r, c in sorted(g.reading.roles.items()) if r != "job_id")
    vals = (
        f"; status values: {', '.join(sum(statuses.states.values(), ())[:10] + statuses.unmapped[:10])}"
        if statuses
        else ""
    )
    lacking = []
    if "runnable_at" not in g.reading.roles:
        lacking.append("a runnable-at time")
    if not any(
        r in g.reading.roles for r in ("claimed_at", "claimed_by", "claim_expires_at", "heartbeat")
    ):
        lacking.append("a claim (locked/reserved at or by, lease, heartbeat)")
    if "payload" not in g.reading.roles and "job_type" not in g.reading.roles:
        lacking.append("a payload or job type")
    need = f"; it lacks {', '.join(lacking)}" if lacking else ""
    return CoverageGap(
        "queue_roles",
        g.key,
        "looks like a job queue but is not read as one"
        + (f" ({why})" if why else "")
        + f": backlog, stuck and failed not judged; roles seen: {roles or 'none'}{need}{vals}; "
        f"columns seen: {_seen(g)}",
    )


def generic_tables(conn: Connection, engine: str, rows: list[Row]) -> list[GenericTable]:
    """The catalog rows no library shape matched, read by shape: queues and questions, the
    libraries' own other tables left out. MySQL/MariaDB: one index read per schema."""
    out: list[GenericTable] = []
    rows = [
        r
        for r in rows
        if not library_family(to_str(r.get("table_name")), set(as_mapping(r.get("columns"))))
    ]
    if engine != "postgresql" and rows:
        rows = _my_all_columns(conn, rows)
    for r in rows:
        cols = {str(k): str(v) for k, v in as_mapping(r.get("columns")).items()}
        name = to_str(r.get("table_name"))
        enums = {
            str(k).lower(): tuple(map(str, v))
            for k, v in as_mapping(r.get("enums")).items()
            if isinstance(v, (list, tuple))
        }
        raw = r.get("indexed")
        indexed = (
            frozenset(str(c).lower() for c in raw if c) if isinstance(raw, list) else frozenset()
        )
        reading = recognise_shape(cols, name, indexed, enums)
        if reading is None:
            continue
        out.append(
            GenericTable(
                schema=to_str(r.get("schema")),
                table=name,
                reading=reading,
                types=cols,  # as the catalog spells them (quoted camelCase stays)
                indexed=indexed,
                rows_estimate=_estimate(r.get("rows_estimate")),
                current=to_bool(r.get("current_db")),
            )
        )
    if engine != "postgresql" and out:
        out = _my_indexes(conn, out)
    return out


def _my_all_columns(conn: Connection, rows: list[Row]) -> list[Row]:
    """MySQL/MariaDB: every column of the candidates (the catalog read returned role names
    only), one read per schema of the named tables."""
    by_schema: dict[str, list[str]] = {}
    for r in rows:
        by_schema.setdefault(to_str(r.get("schema")), []).append(to_str(r.get("table_name")))
    full: dict[tuple[str, str], dict[str, str]] = {}
    for schema, names in by_schema.items():
        got = conn.rows(
            sql("mysql", "queue_generic_columns", conn.version),
            {"schema": schema, "tables": tuple(names)},
        )
        for c in map(as_row, got):
            full.setdefault((schema, to_str(c.get("table_name"))), {})[
                to_str(c.get("column_name"))
            ] = to_str(c.get("column_type"))
    return [
        {
            **r,
            "columns": full.get((to_str(r.get("schema")), to_str(r.get("table_name"))))
            or as_mapping(r.get("columns")),
        }
        for r in rows
    ]


def _my_indexes(conn: Connection, tables: list[GenericTable]) -> list[GenericTable]:
    by_schema: dict[str, list[GenericTable]] = {}
    for g in tables:
        by_schema.setdefault(g.schema, []).append(g)
    lead: dict[tuple[str, str], set[str]] = {}
    for schema, group in by_schema.items():
        rows = conn.rows(
            sql("mysql", "queue_generic_indexes", conn.version),
            {"schema": schema, "tables": tuple(g.table for g in group)},
        )
        for r in map(as_row, rows):
            lead.setdefault((schema, to_str(r.get("table_name"))), set()).add(
                to_str(r.get("column_name"))
            )
    return [replace(g, indexed=frozenset(lead.get((g.schema, g.table), ()))) for g in tables]


def _estimate(value: object) -> int | None:
    n = opt_int(value)
    return n if n is not None and n >= 0 else None


def as_mapping(value: object) -> Mapping[str, object]:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str) and value.startswith("{"):
        loaded = json.loads(value)
        return loaded if isinstance(loaded, dict) else {}
    return {}


def columns_of(value: object) -> dict[str, str]:
    """name -> SQL type: PostgreSQL's JSON object, MySQL's dict built here, or 'name type,...'."""
    if isinstance(value, Mapping):
        return {str(k).lower(): str(v or "") for k, v in value.items()}
    if isinstance(value, str) and value.startswith("{"):
        return columns_of(json.loads(value))
    out = {}
    for item in str(value or "").split(","):
        name, _, ctype = item.strip().partition(" ")
        if name:
            out[name.lower()] = ctype.strip()
    return out


MY_CATALOG_ROWS = 50_000  # marker-column rows read from information_schema.COLUMNS
_LIBRARY_MARKERS = frozenset(MARKER_COLUMNS)  # the 6-column rule counts library markers only
PG_CATALOG_ROWS = 2000  # candidate tables returned by PostgreSQL's catalog query (its LIMIT)


def my_candidates(conn: Connection) -> tuple[list[Row], bool]:
    """MySQL/MariaDB: marker columns per table, grouped here (see queue_tables.sql for why),
    in the shape of PostgreSQL's catalog query: schema, table_name, columns, current_db."""
    schema = opt_str(getattr(conn.spec, "scoped_database", None))
    name = "queue_tables_scoped" if schema else "queue_tables"
    params: dict[str, object] = {"markers": tuple(CATALOG_COLUMNS)}
    if schema:
        params["schema"] = schema
    current = schema or opt_str(getattr(conn.spec, "database", None))
    tables: dict[tuple[str, str], dict[str, str]] = {}
    raw = conn.rows(sql("mysql", name, conn.version), params)
    for r in map(as_row, raw):
        key = (to_str(r.get("schema")), to_str(r.get("table_name")))
        tables.setdefault(key, {})[to_str(r.get("column_name"))] = to_str(r.get("column_type"))
    out: list[Row] = [
        {"schema": s, "table_name": t, "columns": cols, "current_db": s == current}
        for (s, t), cols in tables.items()
        if len(_LIBRARY_MARKERS.intersection(cols)) >= 6
        or (len(cols) >= 3 and not CORE_COLUMNS.isdisjoint(cols))
        or (len(cols) >= 2 and queue_named(t))
    ]
    out.sort(key=lambda r: (not r["current_db"], str(r["schema"]), str(r["table_name"])))
    return out, len(raw) >= MY_CATALOG_ROWS
