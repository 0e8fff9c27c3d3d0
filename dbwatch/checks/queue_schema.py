"""QU301: the legacy (queue, reserved_at) index family on Laravel-shaped jobs tables."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from ..findings import Finding
from . import CheckContext, check

# Laravel 5.1–5.2, 5.3–5.4, and 12.54 only; the 5.5 upgrade never replaced existing ones.
LEGACY_SHAPES = {
    ("queue", "reserved_at"): "Laravel 5.3–5.4",
    ("queue", "reserved", "reserved_at"): "Laravel 5.1–5.2",
    ("queue", "reserved_at", "available_at"): "Laravel 12.54",
}


def _q_my(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _q_pg(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _fix(engine: str, schema: str, table: str, index: str, has_queue_index: bool) -> str:
    new = f"{table}_queue_index"
    if engine == "postgresql":
        tbl = f"{_q_pg(schema)}.{_q_pg(table)}"
        create = (
            "" if has_queue_index else f"CREATE INDEX CONCURRENTLY {_q_pg(new)} ON {tbl} (queue); "
        )
        return f"{create}DROP INDEX CONCURRENTLY {_q_pg(schema)}.{_q_pg(index)};"
    tbl = f"{_q_my(schema)}.{_q_my(table)}"
    add = "" if has_queue_index else f", ADD INDEX {_q_my(new)} (`queue`)"
    return f"ALTER TABLE {tbl} DROP INDEX {_q_my(index)}{add}, ALGORITHM=INPLACE, LOCK=NONE;"


@check("legacy_queue_index", postgresql=["pg.queue_indexes"], mysql=["my.queue_indexes"])
def legacy_queue_index(ctx: CheckContext) -> Iterator[Finding]:
    section = "pg.queue_indexes" if ctx.snapshot.engine == "postgresql" else "my.queue_indexes"
    tables: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in ctx.snapshot.section(section):
        tables[(row["schema"], row["table_name"])].append(row)
    for (schema, table), indexes in sorted(tables.items()):
        shapes = [tuple(c.lower() for c in (ix.get("columns") or [])) for ix in indexes]
        has_queue_index = ("queue",) in shapes
        for ix, shape in zip(indexes, shapes):
            if shape not in LEGACY_SHAPES or not ix.get("index_name"):
                continue
            name = ix["index_name"]
            yield ctx.finding(
                severity=ctx.rule.severity,
                subject=f"index {schema}.{table}.{name}",
                summary=ctx.summary(
                    schema=schema,
                    table=table,
                    index=name,
                    columns=", ".join(shape),
                    origin=LEGACY_SHAPES[shape],
                ),
                fix=_fix(ctx.snapshot.engine, schema, table, name, has_queue_index),
                evidence={
                    "schema": schema,
                    "table": table,
                    "index": name,
                    "columns": list(shape),
                    "origin": LEGACY_SHAPES[shape],
                    "has_queue_index": has_queue_index,
                },
                identity=[schema, table, name],
            )
