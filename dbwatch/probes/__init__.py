"""Probes: the only code with SQL. Each probe fills one snapshot section; failures are recorded.

SQL lives in sql/<engine>/<name>[_post_<version_num>].sql; the file with the highest
version not above the server's is used (pg_activity's habit). Parameters are always bound.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import ProbeError, TargetError
from ..snapshot import ProbeFailure, Snapshot
from ..targets import Connection
from ..targets.version import FLAVOURS, ServerVersion

log = logging.getLogger(__name__)
SQL_DIR = Path(__file__).with_name("sql")
ProbeFn = Callable[..., Any]


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


PROBES: dict[str, Probe] = {}


def probe(
    name: str, engine: str, grant: str | None = None, with_config: bool = False, ttl: float = 0.0
) -> Callable[[Any], Any]:
    def deco(fn: Any) -> Any:
        PROBES[name] = Probe(name, engine, fn, grant, with_config, ttl)
        return fn

    return deco


class ProbeCache:
    """Per-target results of slow-changing probes (catalog reads), kept by the daemon so a
    15 s cycle does not rescan information_schema on a server with thousands of tables."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[float, Any]] = {}

    def get(self, name: str, ttl: float) -> Any:
        hit = self._items.get(name)
        if hit is None or time.monotonic() - hit[0] > ttl:
            return None
        return hit[1]

    def put(self, name: str, data: Any) -> None:
        self._items[name] = (time.monotonic(), data)


@cache
def _sql_variants(engine: str, name: str) -> list[tuple[str | None, int, str]]:
    """(flavour or None for any, minimum version number, text) of every file for `name`:
    <name>.sql, <name>_post_<num>.sql, <name>_<flavour>.sql, <name>_<flavour>_post_<num>.sql."""
    out: list[tuple[str | None, int, str]] = []
    for path in (SQL_DIR / engine).glob(f"{name}*.sql"):
        stem = path.stem
        if stem == name:
            out.append((None, 0, path.read_text()))
            continue
        if not stem.startswith(f"{name}_"):
            continue
        rest = stem[len(name) + 1 :]
        flavour: str | None = None
        for f in FLAVOURS:
            if rest == f or rest.startswith(f"{f}_"):
                flavour, rest = f, rest[len(f) + 1 :]
                break
        if rest == "":
            out.append((flavour, 0, path.read_text()))
        elif rest.startswith("post_") and rest[5:].isdigit():
            out.append((flavour, int(rest[5:]), path.read_text()))
    return sorted(out, key=lambda v: (v[0] is not None, v[1]))


def sql(engine: str, name: str, version: ServerVersion | int) -> str:
    """The SQL text for this server. With a ServerVersion, files tagged with its flavour win
    over untagged ones and `_post_<num>` compares numbers of that flavour only (MariaDB
    10.11 never gets a MySQL 8.0 file). A bare int (the action side, for now) sees only
    untagged files."""
    flavour, num = (
        (version.flavour, version.num) if isinstance(version, ServerVersion) else (None, version)
    )
    chosen = None
    for tag, min_version, text in _sql_variants(engine, name):
        if tag is not None and tag != flavour:
            continue
        if num >= min_version:
            chosen = text
    if chosen is None:
        raise ProbeError(name, f"no SQL for {flavour or engine} {num}")
    return chosen


def jsonable(row: dict[str, Any]) -> dict[str, Any]:
    """A driver row as plain JSON values: text for bytes and timestamps, numbers for
    Decimals, keys in lower case (MySQL's information_schema answers in upper case)."""
    out = {}
    for k, v in row.items():
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif hasattr(v, "isoformat"):
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


def _load_all() -> None:
    """Import every probe module in this package so its probes register."""
    import importlib
    import pkgutil

    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")


def run_probes(
    conn: Connection,
    target: str,
    needs: Iterable[str],
    stats: ProbeStats | None = None,
    config: Any = None,
    cache: ProbeCache | None = None,
) -> Snapshot:
    """Run the needed probes on one open connection; a failed probe leaves its section None.
    With a cache (the daemon), probes with a ttl reuse their last complete result."""
    _load_all()
    started = time.time()
    sections: dict[str, Any] = {}
    failures: list[ProbeFailure] = []
    features: set[str] = set()
    for name in sorted(set(needs)):
        p = PROBES.get(name)
        if p is None or p.engine != conn.engine:
            continue
        cached = cache.get(name, p.ttl) if cache is not None and p.ttl else None
        if cached is not None:
            sections[name] = cached
            continue
        t0 = time.perf_counter()
        try:
            data = p.fn(conn, config) if p.with_config else p.fn(conn)
        except ProbeError as exc:
            grant = exc.grant or (p.grant if exc.privilege else None)
            failures.append(ProbeFailure(name, exc.detail, grant, exc.privilege))
            log.debug("probe %s on %s failed: %s", name, target, exc.detail)
            sections[name] = None
            continue
        if stats is not None:
            stats.seconds += time.perf_counter() - t0
            stats.per_probe[name] = round(time.perf_counter() - t0, 4)
            stats.queries += 1
            stats.rows += len(data) if isinstance(data, list) else 1
        if isinstance(data, PartialResult):
            failures.append(ProbeFailure(name, data.message, data.grant or p.grant, True))
            data = data.data
        elif cache is not None and p.ttl:
            cache.put(name, data)
        sections[name] = data
    features |= _features(conn)
    return Snapshot(
        target=target,
        engine=conn.flavour,
        server_version=conn.server_version,
        version_num=conn.version_num,
        taken_at=started,
        sections=sections,
        failures=tuple(failures),
        features=frozenset(features),
    )


@dataclass(frozen=True)
class PartialResult:
    """Data that was readable, plus a note that privileges hid some of it."""

    data: Any
    message: str
    grant: str | None = None


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
