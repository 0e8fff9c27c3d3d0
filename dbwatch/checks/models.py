"""The per-snapshot models several consumers share: the horizon holders (PG201, PG202,
terminate, the figures) and the PostgreSQL figures the daemon records for PG102/PG202."""

from __future__ import annotations

import threading
import weakref

from ..snapshot import Snapshot
from ..snapshot.pg import PG_HORIZON, PG_SESSIONS
from ..snapshot.pg_mvcc import PG_DEAD_TUPLES, PG_DEADLOCKS, PgDeadTable, deadlocks_in_scope
from .pg_horizon import Holder, holders


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


# horizon_holders of the last few snapshots (PG201, PG202, the history values and the
# metrics all ask, each cycle), by id with a weak reference: a snapshot is not kept alive
# here, and a new one at a recycled address does not match
_HOLDERS: dict[int, tuple[weakref.ref[Snapshot], list[Holder] | None]] = {}
_HOLDERS_LOCK = threading.Lock()


def horizon_holders(snapshot: Snapshot) -> list[Holder] | None:
    """The horizon's holders in this snapshot (None without pg.horizon): its backends are
    the pg.sessions rows of the whole cluster. Computed once per snapshot; callers must not
    change the list."""
    hit = _HOLDERS.get(id(snapshot))
    if hit is not None and hit[0]() is snapshot:
        return hit[1]
    out = _horizon_holders(snapshot)
    with _HOLDERS_LOCK:  # the daemon's threads: eviction iterates the dict
        _HOLDERS[id(snapshot)] = (weakref.ref(snapshot), out)
        while len(_HOLDERS) > 64:
            _HOLDERS.pop(next(iter(_HOLDERS)), None)
    return out


def _horizon_holders(snapshot: Snapshot) -> list[Holder] | None:
    hz = snapshot.get(PG_HORIZON)
    if hz is None:
        return None
    sessions = snapshot.get(PG_SESSIONS)
    return holders(hz, snapshot.target, sessions or ())
