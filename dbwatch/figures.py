"""A target's measured figures for one cycle (history keys -> values): what the daemon records
and exports as metrics, and what `audit --format nagios` prints as perfdata. Tolerant: a
section that is absent or shaped differently yields nothing."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from .findings import Finding
from .snapshot import Snapshot
from .snapshot.my import MY_INNODB_COUNTERS, MY_TRX
from .snapshot.pg import scoped_sessions
from .snapshot.queues import MY_QUEUES, PG_QUEUES

if TYPE_CHECKING:
    from .checks.pg_horizon import Holder

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


# dbwatch.checks.models' history_values and horizon_holders, imported on first use (the
# PostgreSQL models: not for a MySQL audit), not by an import statement per cycle
_MODELS: list[tuple[Callable[[Snapshot], dict[str, float]], Callable[[Snapshot], Any]]] = []


def _pg_values(snap: Snapshot) -> dict[str, float]:
    """The keys PG202/PG102/PG201 read back (dbwatch.checks.models), plus the horizon age."""
    if not _MODELS:
        try:
            from .checks.models import history_values, horizon_holders
        except ImportError:
            return {}
        _MODELS.append((history_values, horizon_holders))
    values, holders = _MODELS[0]
    out = dict(values(snap))
    hs: list[Holder] | None = holders(snap)
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
    read = snap.sections.get
    if read("pg.sessions") is not None or read("my.trx") is not None:
        pg = scoped_sessions(snap)
        ages = [s.xact_seconds for s in pg if s.client]
        ages += [_num(t.trx_seconds) for t in snap.get(MY_TRX) or ()]
        out["oldest_xact_seconds"] = max([a for a in ages if a is not None], default=0.0)
    # only from the sections they read (a MySQL snapshot has none of them: nothing to add)
    if (
        read("pg.dead_tuples") is not None
        or read("pg.deadlocks") is not None
        or read("pg.horizon") is not None
    ):
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
