"""Probes: the only code with SQL. Each probe fills one snapshot section; failures are recorded.

SQL lives in sql/<engine>/<name>[_post_<version_num>].sql; the file with the highest
version not above the server's is used (pg_activity's habit). Parameters are always bound.

One module per concern: `registry` (Probe, @probe, PROBES), `run` (run_probes into a
Snapshot), `results` (Covered, PartialResult, jsonable), `share` (the daemon's shared and
cached reads), `sqlfiles` (the SQL files), `grants` (a refusal's exact GRANT); the other
modules are the probes themselves. The names other layers use are importable from here.
"""

from __future__ import annotations

from .registry import PROBES, Probe, probe
from .results import Covered, PartialResult, jsonable
from .run import ALWAYS, PROBE_BUDGET, ProbeStats, run_probes, unreachable_snapshot
from .share import CATALOG_MAX_AGE, ProbeCache, SharedProbes, catalog_cached, per_server
from .sqlfiles import SQL_DIR, sql

__all__ = [
    "ALWAYS",
    "CATALOG_MAX_AGE",
    "PROBES",
    "PROBE_BUDGET",
    "SQL_DIR",
    "Covered",
    "PartialResult",
    "Probe",
    "ProbeCache",
    "ProbeStats",
    "SharedProbes",
    "catalog_cached",
    "jsonable",
    "per_server",
    "probe",
    "run_probes",
    "sql",
    "unreachable_snapshot",
]
