"""Probes: the only code with SQL. Each probe fills one snapshot section; failures are recorded.

SQL lives in sql/<engine>/<name>[_post_<version_num>].sql; the file with the highest
version not above the server's is used (pg_activity's habit). Parameters are always bound.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from datetime import time as dtime
from decimal import Decimal
from functools import partial
from typing import Any, TypeVar

from ..config import Config
from ..errors import ProbeError, TargetError
from ..snapshot import CoverageGap, ProbeFailure, Snapshot, build_section
from ..targets import Connection, scrub
from .share import (
    _CYCLE,
    _SHARED,
    CATALOG_MAX_AGE,
    ProbeCache,
    SharedProbes,
    _Cycle,
    catalog_cached,
    per_server,
)
from .sqlfiles import SQL_DIR, _sql_variants, sql

__all__ = [
    "CATALOG_MAX_AGE",
    "SQL_DIR",
    "ProbeCache",
    "SharedProbes",
    "_sql_variants",
    "catalog_cached",
    "per_server",
    "sql",
]

log = logging.getLogger(__name__)
# Probing one target stops starting new probes after this long; the rest are DW002 gaps.
PROBE_BUDGET = 60.0
# Sections every audit reads whatever the rules: what the monitoring user may see (DW001).
ALWAYS = ("pg.privileges", "my.privileges")
# fn(conn), fn(conn, config) with with_config, fn(conn, cache=...) with with_cache: the
# result is driver rows (or Covered / PartialResult of them), typed by the section builder
ProbeFn = Callable[..., object]
F = TypeVar("F", bound=ProbeFn)


@dataclass(frozen=True)
class Probe:
    name: str
    engine: str  # postgresql | mysql
    fn: ProbeFn
    grant: str | None = None  # what fixes a privilege refusal
    with_config: bool = (
        False  # fn(conn, config): may open sibling sessions (other databases, peers)
    )
    ttl: float = 0.0  # the daemon may reuse a result this many seconds (schema reads)
    # reads the whole server, whatever database the session is in (sessions, InnoDB status):
    # the daemon runs it once per server and user per cycle for all targets of that server
    server_wide: bool = False
    with_cache: bool = False  # fn(conn, cache=...): keeps state between daemon cycles


PROBES: dict[str, Probe] = {}


def probe(
    name: str,
    engine: str,
    grant: str | None = None,
    with_config: bool = False,
    ttl: float = 0.0,
    server_wide: bool = False,
    with_cache: bool = False,
) -> Callable[[F], F]:
    def deco(fn: F) -> F:
        PROBES[name] = Probe(name, engine, fn, grant, with_config, ttl, server_wide, with_cache)
        return fn

    return deco


def jsonable(row: Mapping[str, object]) -> dict[str, Any]:
    """A driver row as plain JSON values: text for bytes and timestamps, numbers for
    Decimals, keys in lower case (MySQL's information_schema answers in upper case)."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, (date, dtime)):
            v = v.isoformat()
        elif isinstance(v, Decimal):
            v = int(v) if v == int(v) else float(v)
        out[str(k).lower()] = v
    return out


@dataclass
class ProbeStats:
    queries: int = 0
    rows: int = 0
    seconds: float = 0.0
    per_probe: dict[str, float] = field(default_factory=dict)


_LOADED = False
# engine -> the modules registering its probes: a PostgreSQL-only audit never imports the
# MySQL probes (startup cost). tests/test_startup.py checks it against what importing every
# module registers; an engine not listed here loads them all.
ENGINE_MODULES: dict[str, tuple[str, ...]] = {
    "postgresql": ("origin", "pg_mvcc", "postgresql", "privileges", "queue", "statements"),
    "mysql": ("innodb", "my_locks", "mysql", "origin", "privileges", "queue", "statements"),
}
_LOADED_ENGINES: set[str] = set()


def _load_all() -> None:
    """Import every probe module in this package so its probes register (once: listing the
    package from disk every cycle cost more than the cycle's own work)."""
    global _LOADED
    if _LOADED:
        return
    import importlib
    import pkgutil

    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    _LOADED = True


def _load_engine(engine: str) -> None:
    """Import the probe modules of one engine (once), all of them for an engine not listed."""
    if _LOADED or engine in _LOADED_ENGINES:
        return
    modules = ENGINE_MODULES.get(engine)
    if modules is None:
        _load_all()
        return
    import importlib

    for name in modules:
        importlib.import_module(f"{__name__}.{name}")
    _LOADED_ENGINES.add(engine)


def run_probes(
    conn: Connection,
    target: str,
    needs: Iterable[str],
    stats: ProbeStats | None = None,
    config: Config | None = None,
    cache: ProbeCache | None = None,
    budget: float = PROBE_BUDGET,
    shared: tuple[SharedProbes, str] | None = None,
) -> Snapshot:
    """Run the needed probes on one open connection; a failed probe leaves its section None.
    With a cache (the daemon), probes with a ttl reuse their last complete result; with
    `shared` (the daemon: store and server key), server-wide probes run once per server.
    Probes not started within the time budget are left None and listed as gaps (DW002)."""
    _load_engine(conn.engine)
    token = _SHARED.set(shared)
    cycle = _CYCLE.set(_Cycle(conn, cache))
    try:
        return _run_probes(conn, target, needs, stats, config, cache, budget, shared)
    finally:
        _CYCLE.reset(cycle)
        _SHARED.reset(token)


def _run_probes(
    conn: Connection,
    target: str,
    needs: Iterable[str],
    stats: ProbeStats | None,
    config: Config | None,
    cache: ProbeCache | None,
    budget: float,
    shared: tuple[SharedProbes, str] | None,
) -> Snapshot:
    started = time.time()
    sections: dict[str, object] = {}
    failures: list[ProbeFailure] = []
    features: set[str] = set()
    gaps: list[CoverageGap] = []
    wanted = set(needs) | set(ALWAYS) if needs else set()
    for name in sorted(wanted, key=lambda n: (n not in ALWAYS, n)):
        p = PROBES.get(name)
        if p is None or p.engine != conn.engine:
            continue
        if time.time() - started > budget:
            gaps.append(_budget_gap(name, budget))
            sections[name] = None
            continue
        cached = cache.get(name, p.ttl) if cache is not None and p.ttl else None
        if cached is not None:
            sections[name] = cached
            continue
        t0 = time.perf_counter()
        data: object
        typed = False
        try:
            if shared is not None and p.server_wide:
                typed = True
                store, key = shared
                # built inside the single flight: every target shares the same typed rows
                data = store.get_or_run(key, name, partial(_built, name, p, conn, config))
            elif p.with_cache:
                data = p.fn(conn, cache=cache)
            else:
                data = _call(p, conn, config)
        except ProbeError as exc:
            grant = exc.grant or (p.grant if exc.privilege else None)
            failures.append(ProbeFailure(name, exc.detail, grant, exc.privilege))
            log.debug("probe %s on %s failed: %s", name, target, exc.detail)
            sections[name] = None
            continue
        except TargetError:
            raise  # the connection is gone: the whole target is unreachable
        except Exception as exc:  # a bug in one probe: its rules are unknown, the rest reports
            log.exception("probe %s on %s raised", name, target)
            why = scrub(f"internal error: {type(exc).__name__}: {exc}", conn.spec)
            failures.append(ProbeFailure(name, f"{why} (a dbwatch bug: please report it)"))
            sections[name] = None
            continue
        if stats is not None:
            stats.seconds += time.perf_counter() - t0
            stats.per_probe[name] = round(time.perf_counter() - t0, 4)
            stats.queries += 1
            stats.rows += len(data) if isinstance(data, (list, tuple)) else 1
        complete = True  # only complete results are cached: gaps and refusals must repeat
        if isinstance(data, Covered):
            gaps += data.gaps
            data, complete = data.data, False
        if isinstance(data, PartialResult):
            grant = data.grant or (p.grant if data.privilege else None)
            failures.append(ProbeFailure(name, data.message, grant, data.privilege, data.fix))
            data, complete = data.data, False
        if not typed:  # shared results were typed once, inside the single flight
            data = build_section(name, data)  # typed rows, once, at the probe boundary
        if cache is not None and p.ttl and complete:
            cache.put(name, data)
        sections[name] = data
    features |= _features(conn)
    from .grants import exact_grant

    failures = [dataclasses.replace(f, grant=exact_grant(f.grant, sections)) for f in failures]
    return Snapshot(
        target=target,
        engine=conn.flavour,
        server_version=conn.server_version,
        version_num=conn.version_num,
        taken_at=started,
        sections=sections,
        failures=tuple(failures),
        features=frozenset(features),
        gaps=tuple(gaps),
        scope=conn.spec.scoped_database,
    )


def _budget_gap(name: str, budget: float) -> CoverageGap:
    return CoverageGap(
        "time_budget",
        name,
        f"not run: probing this target took more than its {budget:g} s budget "
        "(a slow or loaded server; the next cycle tries again)",
    )


@dataclass(frozen=True)
class Covered:
    """A probe's data plus what it did not examine (caps, invisible objects): DW002 gaps.
    May wrap a PartialResult."""

    data: object
    gaps: tuple[CoverageGap, ...]


def _call(p: Probe, conn: Connection, config: Config | None) -> object:
    return p.fn(conn, config) if p.with_config else p.fn(conn)


def _built(name: str, p: Probe, conn: Connection, config: Any) -> object:
    """The probe's result with its rows typed (inside Covered / PartialResult)."""
    return _typed(name, _call(p, conn, config))


def _typed(name: str, data: object) -> object:
    if isinstance(data, Covered):
        return dataclasses.replace(data, data=_typed(name, data.data))
    if isinstance(data, PartialResult):
        return dataclasses.replace(data, data=_typed(name, data.data))
    return build_section(name, data)


@dataclass(frozen=True)
class PartialResult:
    """Data that was readable, plus a note that privileges hid some of it."""

    data: object
    message: str
    grant: str | None = None
    privilege: bool = True  # False: not a privilege (a table's layout was not understood)
    fix: str | None = None  # the fix when it is not a GRANT


def _features(conn: Connection) -> set[str]:
    out = set()
    if conn.version.supports_skip_locked():
        out.add("skip_locked")
    return out


def unreachable_snapshot(target: str, engine: str, error: TargetError) -> Snapshot:
    return Snapshot(
        target=target,
        engine=engine,
        server_version="",
        version_num=0,
        taken_at=time.time(),
        sections={},
        failures=(ProbeFailure("connect", error.detail),),
    )
