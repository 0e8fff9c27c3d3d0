"""QU301: the legacy (queue, reserved_at) index family on Laravel-shaped jobs tables."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from ..findings import Finding
from ..snapshot.queues import QueueIndex, queue_indexes_key
from ..targets.quoting import my_ident, pg_ident_text
from . import CheckContext, check

# Laravel 5.1–5.2, 5.3–5.4, and 12.54 only; the 5.5 upgrade never replaced existing ones.
LEGACY_SHAPES = {
    ("queue", "reserved_at"): "Laravel 5.3–5.4",
    ("queue", "reserved", "reserved_at"): "Laravel 5.1–5.2",
    ("queue", "reserved_at", "available_at"): "Laravel 12.54",
}


def _fix(engine: str, schema: str, table: str, index: str, has_queue_index: bool) -> str:
    new = f"{table}_queue_index"
    if engine == "postgresql":
        tbl = pg_ident_text(schema, table)
        create = (
            ""
            if has_queue_index
            else f"CREATE INDEX CONCURRENTLY {pg_ident_text(new)} ON {tbl} (queue); "
        )
        return f"{create}DROP INDEX CONCURRENTLY {pg_ident_text(schema, index)};"
    tbl = my_ident(schema, table)
    add = "" if has_queue_index else f", ADD INDEX {my_ident(new)} (`queue`)"
    return f"ALTER TABLE {tbl} DROP INDEX {my_ident(index)}{add}, ALGORITHM=INPLACE, LOCK=NONE;"


@check("legacy_queue_index", postgresql=["pg.queue_indexes"], mysql=["my.queue_indexes"])
def legacy_queue_index(ctx: CheckContext) -> Iterator[Finding]:
    tables: dict[tuple[str, str], list[QueueIndex]] = defaultdict(list)
    for row in ctx.snapshot.get(queue_indexes_key(ctx.snapshot.engine)) or ():
        tables[(row.schema, row.table_name)].append(row)
    for (schema, table), indexes in sorted(tables.items()):
        shapes = [tuple(c.lower() for c in ix.columns) for ix in indexes]
        has_queue_index = ("queue",) in shapes
        for ix, shape in zip(indexes, shapes):
            name = ix.index_name
            if shape not in LEGACY_SHAPES or not name:
                continue
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
