"""Running the probes a target's rules need on one connection, into a Snapshot: the time
budget, the daemon's caches and shared server-wide reads, and a failed probe recorded (its
section None, never empty).
"""

from __future__ import annotations

import dataclasses
import logging
import marshal
import time
from collections.abc import Iterable
from dataclasses import field
from typing import Any

from ..config import Config
from ..errors import ProbeError, TargetError
from ..frozen import mutable
from ..snapshot import CoverageGap, ProbeFailure, Snapshot, build_section
from ..targets import Connection, scrub
from .registry import Probe, engine_probes
from .results import Covered, PartialResult
from .share import _CYCLE, _SHARED, ProbeCache, SharedProbes, _Cycle

log = logging.getLogger(__name__)
# Probing one target stops starting new probes after this long; the rest are DW002 gaps.
PROBE_BUDGET = 60.0
# Sections every audit reads whatever the rules: what the monitoring user may see (DW001).
ALWAYS = ("pg.privileges", "my.privileges")


@mutable
class ProbeStats:
    queries: int = 0
    rows: int = 0
    seconds: float = 0.0
    per_probe: dict[str, float] = field(default_factory=dict)


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
    clock = time.perf_counter()  # the budget's start
    sections: dict[str, object] = {}
    cyc = _CYCLE.get()
    if cyc is not None:
        cyc.sections = sections  # what later probes of this pass may look at (shared_section)
    failures: list[ProbeFailure] = []
    gaps: list[CoverageGap] = []
    probes = engine_probes(conn.engine)
    engine = conn.engine
    perf = time.perf_counter
    for name in _order(needs):
        p = probes.get(name)
        if p is None or p.engine != engine:
            continue
        t0 = perf()
        if t0 - clock > budget:
            gaps.append(_budget_gap(name, budget))
            sections[name] = None
            continue
        ttl = p.ttl
        if ttl and cache is not None:
            cached = cache.get(name, ttl)
            if cached is not None:
                sections[name] = cached
                continue
        data: object
        typed = False
        try:
            if shared is not None and p.server_wide:
                typed = True
                # built inside the single flight: every target shares the same typed rows
                data = shared[0].get_or_run(shared[1], name, _built, name, p, conn, config)
            elif p.with_cache:
                data = p.fn(conn, cache=cache)
            elif p.with_config:
                data = p.fn(conn, config)
            else:
                data = p.fn(conn)
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
            took = perf() - t0
            stats.seconds += took
            stats.per_probe[name] = round(took, 4)
            stats.queries += 1
            stats.rows += len(data) if isinstance(data, (list, tuple)) else 1
        complete = True  # only complete results are cached: gaps and refusals must repeat
        if isinstance(data, _WRAPPED):
            if isinstance(data, Covered):
                gaps += data.gaps
                data, complete = data.data, False
            if isinstance(data, PartialResult):
                grant = data.grant or (p.grant if data.privilege else None)
                failures.append(ProbeFailure(name, data.message, grant, data.privilege, data.fix))
                data, complete = data.data, False
        if not typed:  # shared results were typed once, inside the single flight
            data = _build(name, data, cache)  # typed rows, once, at the probe boundary
        if ttl and complete and cache is not None:
            cache.put(name, data)
        sections[name] = data
    features = _features(conn)
    if failures:
        from .grants import exact_grant

        failures = [dataclasses.replace(f, grant=exact_grant(f.grant, sections)) for f in failures]
    # each section went through build_section above (or the shared flight)
    return Snapshot.of_built(
        target,
        conn.flavour,
        conn.server_version,
        conn.version_num,
        started,
        sections,
        tuple(failures),
        features,
        tuple(gaps),
        conn.spec.scoped_database,
    )


# the probing order of a set of needed sections (ALWAYS first, then by name), kept: a
# daemon's targets ask for the same few sets every cycle
_ORDERS: dict[frozenset[str], tuple[str, ...]] = {}


def _order(needs: Iterable[str]) -> tuple[str, ...]:
    key = frozenset(needs)
    hit = _ORDERS.get(key)
    if hit is None:
        wanted = set(key) | set(ALWAYS) if key else set()
        hit = tuple(sorted(wanted, key=lambda n: (n not in ALWAYS, n)))
        if len(_ORDERS) > 256:  # rule sets come and go with reloads
            _ORDERS.clear()
        _ORDERS[key] = hit
    return hit


# what a probe may wrap its data in (gaps, a partial read)
_WRAPPED = (Covered, PartialResult)
# what a probe returns as driver rows (marshalled to compare with the last cycle's)
_RAW = frozenset((dict, list, tuple))


def _build(name: str, data: object, cache: ProbeCache | None) -> object:
    """build_section; in the daemon (a cache), the section built last cycle again when the
    probe returned the same data (an idle database: the same rows every cycle). A builder is
    a function of its data alone (typed rows, nothing read from the clock), and built
    sections are never changed by their readers (the ttl cache shares them across cycles
    already). "The same" is the data's marshal form: exact types (1, 1.0 and True differ
    there, not under ==) and order; data marshal cannot write (dates, decimals) is built."""
    if cache is None or type(data) not in _RAW:
        # a probe that returned its section typed already (pg.horizon, pg.txn_detail): the
        # builder passes it through; marshal would only raise (an exception each cycle)
        return build_section(name, data)
    try:
        # version 2: no back-references, which depend on refcounts, not on the data
        form = marshal.dumps(data, 2)  # type: ignore[arg-type]  # ValueError if it cannot
    except ValueError:
        cache.built.pop(name, None)
        return build_section(name, data)
    last = cache.built.get(name)
    if last is not None and last[0] == form:
        return last[1]
    out = build_section(name, data)
    cache.built[name] = (form, out)
    return out


def _budget_gap(name: str, budget: float) -> CoverageGap:
    return CoverageGap(
        "time_budget",
        name,
        f"not run: probing this target took more than its {budget:g} s budget "
        "(a slow or loaded server; the next cycle tries again)",
    )


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


def _features(conn: Connection) -> frozenset[str]:
    """What the server's version supports, kept per version object (a connection's)."""
    version = conn.version
    hit = _FEATURES.get(id(version))
    if hit is not None and hit[0] is version:
        return hit[1]
    out = frozenset(("skip_locked",)) if version.supports_skip_locked() else frozenset()
    if len(_FEATURES) > 1024:  # sessions come and go
        _FEATURES.clear()
    _FEATURES[id(version)] = (version, out)
    return out


_FEATURES: dict[int, tuple[object, frozenset[str]]] = {}


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
