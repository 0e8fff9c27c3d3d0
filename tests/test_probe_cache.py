"""The daemon's probe cache: slow-changing catalog probes are reused within their ttl only."""
from __future__ import annotations

import time

from dbwatch.probes import ALWAYS, PROBES, ProbeCache, ProbeStats, run_probes
from dbwatch.targets import open_target, spec_for


def test_ttl_probes_are_reused_and_others_are_not(pg_url: str) -> None:
    assert PROBES["pg.queue_indexes"].ttl > 0 and PROBES["pg.sessions"].ttl == 0
    conn = open_target(spec_for(pg_url))
    cache = ProbeCache()
    try:
        first, second = ProbeStats(), ProbeStats()
        needs = ["pg.queue_indexes", "pg.sessions"]
        run_probes(conn, "t", needs, first, cache=cache)
        snap = run_probes(conn, "t", needs, second, cache=cache)
    finally:
        conn.close()
    # (ALWAYS: the privilege probes every audit runs)
    assert set(first.per_probe) - set(ALWAYS) == {"pg.queue_indexes", "pg.sessions"}
    assert set(second.per_probe) - set(ALWAYS) == {"pg.sessions"}   # the catalog read was reused
    assert snap.sections.get("pg.queue_indexes") is not None


def test_cache_expires() -> None:
    cache = ProbeCache()
    cache.put("x", [1])
    assert cache.get("x", 10.0) == [1]
    time.sleep(0.05)
    assert cache.get("x", 0.01) is None
