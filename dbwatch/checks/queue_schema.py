"""QU301: the legacy (queue, reserved_at) index family on Laravel-shaped jobs tables.

The shapes by release and the fix's SQL are Laravel's (queues/laravel.py), shared with the
`queue-legacy-index` deadlock diagnosis."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from ..findings import Finding
from ..queues.laravel import LEGACY_SHAPES, legacy_index_fix
from ..snapshot.queues import QueueIndex, queue_indexes_key
from . import CheckContext, check, pure


@pure()
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
                fix=legacy_index_fix(ctx.snapshot.engine, schema, table, [name], has_queue_index),
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
