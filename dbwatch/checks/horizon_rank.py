"""Every holder of the xmin horizon ranked, not just the oldest (PG201/PG202): ending only the
oldest moves the horizon to the next one, so a fix must name them all, in order. Pure.
"""

from __future__ import annotations

from typing import Any

from ..durations import format_duration
from ..snapshot.pg_mvcc import PgDeadTable
from .pg_horizon import Holder, in_scope


def _old_enough(h: Holder, min_age: float, min_xids: int) -> bool:
    return h.age_seconds >= min_age if h.age_seconds is not None else h.xid_age >= min_xids


def pinning(table: PgDeadTable, hs: list[Holder], min_age: float, min_xids: int) -> list[Holder]:
    """Every holder that keeps this table's dead tuples, oldest first: ending only the first
    moves the horizon to the next one, so the fix must name them all."""
    return [h for h in hs if in_scope(h, table.database) and _old_enough(h, min_age, min_xids)]


def same_horizon(a: Holder, b: Holder) -> bool:
    """Do these two pin a common database (a cluster-wide holder pins every one)?"""
    if a.catalog_only or b.catalog_only:
        return a.catalog_only and b.catalog_only
    return a.database is None or b.database is None or a.database == b.database


def ranked_evidence(hs: list[Holder]) -> list[dict[str, Any]]:
    """The holders in the order to end them, for evidence and people."""
    return [
        {
            "rank": i,
            "kind": h.kind,
            "holder": h.holder,
            "pid": h.pid,
            "database": h.database,
            "xid_age": h.xid_age,
            "age": format_duration(h.age_seconds) if h.age_seconds is not None else None,
            "fix": h.fix,
        }
        for i, h in enumerate(hs, 1)
    ]
