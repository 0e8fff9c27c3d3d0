"""The per-snapshot models several consumers share, each built once per snapshot (memoised
on it, Snapshot.model): the lock graphs (PG101, PG001/PG002, MY001/MY002, MY101, terminate),
the horizon holders (PG201, PG202, the figures, the metrics, Nagios perfdata), and the
PostgreSQL figures the daemon records for PG102/PG202 to read back."""

from __future__ import annotations

from ..snapshot import Snapshot
from ..snapshot.memo import per_read
from ..snapshot.pg import PG_HORIZON, PG_SESSIONS, PgSession, scoped
from ..snapshot.pg_mvcc import PG_DEAD_TUPLES, PG_DEADLOCKS, PgDeadTable, deadlocks_in_scope
from .lockgraph import LockGraph, pg_graph_of
from .pg_horizon import Holder, holders


def pg_lock_graph(snapshot: Snapshot) -> LockGraph[int]:
    """The lock graph of every pg.sessions row (the cluster's listing: terminate's extent)."""
    return snapshot.model("pg.lock_graph", _pg_lock_graph)


def _pg_lock_graph(snapshot: Snapshot) -> LockGraph[int]:
    rows: tuple[PgSession, ...] = snapshot.get(PG_SESSIONS) or ()
    # once per read: the daemon shares it between the server's targets
    return per_read(rows, "pg.lock_graph", lambda: pg_graph_of(rows))


_NO_WAITS: LockGraph[int] = LockGraph({})


def pg_scoped_lock_graph(snapshot: Snapshot) -> LockGraph[int]:
    """The waits of the target's own sessions (what its rules look at), out of the one
    graph: the sessions of other databases and dbwatch's own connection do not wait here."""
    return snapshot.model("pg.lock_graph.scoped", _pg_scoped_lock_graph)


def _pg_scoped_lock_graph(s: Snapshot) -> LockGraph[int]:
    graph = pg_lock_graph(s)
    if not graph.edges:
        return _NO_WAITS  # nobody waits on the server: nobody waits here either
    rows: tuple[PgSession, ...] = s.get(PG_SESSIONS) or ()
    # per database, once per read (a dict the read's targets fill: the scope is the key)
    by_scope: dict[str | None, LockGraph[int]] = per_read(rows, "pg.lock_graph.scoped", dict)
    hit = by_scope.get(s.scope)
    if hit is None:
        hit = by_scope.setdefault(s.scope, graph.among(r.pid for r in scoped(rows, s.scope)))
    return hit


def horizon_holders(snapshot: Snapshot) -> list[Holder] | None:
    """The horizon's holders in this snapshot (None without pg.horizon): its backends are
    the pg.sessions rows of the whole cluster. Callers must not change the list."""
    return snapshot.model("pg.horizon_holders", _horizon_holders)


def _horizon_holders(snapshot: Snapshot) -> list[Holder] | None:
    hz = snapshot.get(PG_HORIZON)
    if hz is None:
        return None
    rows: tuple[PgSession, ...] = snapshot.get(PG_SESSIONS) or ()
    if hz.instance.in_recovery or hz.standbys or hz.backends:
        return holders(hz, snapshot.target, rows)  # names the target, or its own peers
    # a primary's holders are the server's (its sessions, prepared transactions, slots,
    # standbys' feedback), the same for each of its targets: once per shared read
    return per_read(
        rows,
        "pg.horizon_holders",
        lambda: holders(hz, snapshot.target, rows),
        also=(hz.prepared, hz.slots, hz.replication),
    )


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
