"""The per-snapshot models several consumers share, each built once per snapshot (memoised
on it, Snapshot.model): the lock graphs (PG101, PG001/PG002, MY001/MY002, MY101, terminate),
the horizon holders (PG201, PG202, the figures, the metrics, Nagios perfdata), and the
PostgreSQL figures the daemon records for PG102/PG202 to read back."""

from __future__ import annotations

from ..snapshot import Snapshot
from ..snapshot.pg import PG_HORIZON, PG_SESSIONS, PgSession, scoped
from ..snapshot.pg_mvcc import PG_DEAD_TUPLES, PG_DEADLOCKS, PgDeadTable, deadlocks_in_scope
from .lockgraph import LockGraph, pg_graph_of
from .pg_horizon import Holder, holders


def pg_lock_graph(snapshot: Snapshot) -> LockGraph[int]:
    """The lock graph of every pg.sessions row (the cluster's listing: terminate's extent)."""
    return snapshot.model("pg.lock_graph", _pg_lock_graph)


def _pg_lock_graph(snapshot: Snapshot) -> LockGraph[int]:
    rows: tuple[PgSession, ...] = snapshot.get(PG_SESSIONS) or ()
    return pg_graph_of(rows)


def pg_scoped_lock_graph(snapshot: Snapshot) -> LockGraph[int]:
    """The waits of the target's own sessions (what its rules look at), out of the one
    graph: the sessions of other databases and dbwatch's own connection do not wait here."""

    def view(s: Snapshot) -> LockGraph[int]:
        return pg_lock_graph(s).among(r.pid for r in scoped(s.get(PG_SESSIONS) or (), s.scope))

    return snapshot.model("pg.lock_graph.scoped", view)


def horizon_holders(snapshot: Snapshot) -> list[Holder] | None:
    """The horizon's holders in this snapshot (None without pg.horizon): its backends are
    the pg.sessions rows of the whole cluster. Callers must not change the list."""
    return snapshot.model("pg.horizon_holders", _horizon_holders)


def _horizon_holders(snapshot: Snapshot) -> list[Holder] | None:
    hz = snapshot.get(PG_HORIZON)
    if hz is None:
        return None
    rows: tuple[PgSession, ...] = snapshot.get(PG_SESSIONS) or ()
    return holders(hz, snapshot.target, rows)


def dead_tables(snapshot: Snapshot) -> tuple[PgDeadTable, ...]:
    dead = snapshot.get(PG_DEAD_TUPLES)
    return () if dead is None else dead.tables


def history_values(snapshot: Snapshot) -> dict[str, float]:
    """Values the daemon should record each cycle (keys read back by PG202 and PG102)."""
    out: dict[str, float] = {}
    for t in dead_tables(snapshot):
        out[f"pg.n_dead_tup:{t.key}"] = float(t.dead)
        out[f"pg.autovacuum_count:{t.key}"] = float(t.autovacuum_count or 0)
    for d in deadlocks_in_scope(snapshot.get(PG_DEADLOCKS), snapshot.scope):
        if snapshot.scope is not None and d.database != snapshot.scope:
            continue
        out[f"pg.deadlocks:{d.database}"] = float(d.deadlocks or 0)
    hs = horizon_holders(snapshot)
    if hs is not None:
        out["pg.horizon_xid_age"] = float(hs[0].xid_age if hs else 0)
    return out
