"""A target's measured figures for one cycle (history keys -> values): what the daemon records
and exports as metrics, and what `audit --format nagios` prints as perfdata. Tolerant: a
section that is absent or shaped differently yields nothing."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from decimal import Decimal

from .findings import Finding
from .snapshot import Snapshot
from .snapshot.my import MY_INNODB_COUNTERS, MY_TRX
from .snapshot.pg import PG_SESSIONS, scoped
from .snapshot.queues import MY_QUEUES, PG_QUEUES

log = logging.getLogger(__name__)


def _num(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float, str, bytes, Decimal)):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _pg_values(snap: Snapshot) -> dict[str, float]:
    """The keys PG202/PG102/PG201 read back (dbwatch.checks.pg_mvcc), plus the horizon age."""
    try:
        from .checks.pg_mvcc import history_values, snapshot_holders
    except ImportError:
        return {}
    out = dict(history_values(snap))
    hs = snapshot_holders(snap)
    if hs is not None:
        ages = [h.age_seconds for h in hs if h.age_seconds is not None]
        out["pg.horizon_age_seconds"] = max(ages, default=0.0)
    return out


def gauges(snap: Snapshot, findings: Sequence[Finding] = ()) -> dict[str, float]:
    """History keys -> values for this cycle; sections absent or shaped otherwise yield nothing.

    Keys: oldest_xact_seconds, innodb_deadlocks, innodb_history_list_length,
    queue_depth:<schema.table>/<queue>, queue_age_seconds:<…>, and from PostgreSQL
    pg.n_dead_tup:<db.schema.table>, pg.autovacuum_count:<…>, pg.deadlocks:<db>,
    pg.horizon_xid_age, pg.horizon_age_seconds.
    """
    out: dict[str, float] = {}
    pg = scoped(snap.get(PG_SESSIONS) or (), snap.scope)
    ages = [s.xact_seconds for s in pg if s.client]
    ages += [_num(t.trx_seconds) for t in snap.get(MY_TRX) or ()]
    if snap.has("pg.sessions") or snap.has("my.trx"):
        out["oldest_xact_seconds"] = max([a for a in ages if a is not None], default=0.0)
    try:
        out.update(_pg_values(snap))
    except Exception:
        log.debug("history values of %s failed", snap.target, exc_info=True)
    counters = snap.get(MY_INNODB_COUNTERS)
    if counters is not None:
        for key, n in (
            ("innodb_deadlocks", counters.deadlocks),
            ("innodb_history_list_length", counters.history_list_length),
        ):
            if n is not None:
                out[key] = float(n)
    for queues in (PG_QUEUES, MY_QUEUES):
        for t in stats.tables if (stats := snap.get(queues)) else ():
            for q in t.summary or ():
                name = f"{t.schema}.{t.table}/{q.queue}"
                out[f"queue_depth:{name}"] = float(q.available)
                if q.oldest_available_seconds is not None:
                    out[f"queue_age_seconds:{name}"] = q.oldest_available_seconds
    return out


def server_deadlocks(values: dict[str, float]) -> float | None:
    """The server's own deadlock counter (summed over databases on PostgreSQL)."""
    pg = [v for k, v in values.items() if k.startswith("pg.deadlocks:")]
    if pg:
        return sum(pg)
    return values.get("innodb_deadlocks")
