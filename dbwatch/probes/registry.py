"""The probe registry: a probe's name (its snapshot section), engine and how it is called.

Each probe module registers its probes with `@probe(...)`; `PROBES` imports those modules once
per process, when it is first read (dbwatch.registry).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from ..frozen import frozen
from ..registry import Registry

# fn(conn), fn(conn, config) with with_config, fn(conn, cache=...) with with_cache: the
# result is driver rows (or Covered / PartialResult of them), typed by the section builder
ProbeFn = Callable[..., object]
F = TypeVar("F", bound=ProbeFn)


@frozen
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


# The modules that register probes, in file-name order. tests/test_registry.py fails on a module
# that registers a probe and is missing here.
PROBES: Registry[Probe] = Registry(
    "probe",
    tuple(
        f"dbwatch.probes.{m}"
        for m in (
            "innodb",
            "my_locks",
            "mysql",
            "origin",
            "pg_mvcc",
            "postgresql",
            "privileges",
            "queue",
            "statements",
        )
    ),
)


# engine -> the modules registering its probes: a PostgreSQL-only audit never imports the
# MySQL probes (startup cost). tests/test_startup.py checks it against what the modules
# register; an engine not listed here loads them all.
ENGINE_MODULES: dict[str, tuple[str, ...]] = {
    "postgresql": ("origin", "pg_mvcc", "postgresql", "privileges", "queue", "statements"),
    "mysql": ("innodb", "my_locks", "mysql", "origin", "privileges", "queue", "statements"),
}


# engine -> the registry's live mapping once that engine's modules are imported (every cycle
# after a process's first asks again)
_READY: dict[str, Mapping[str, Probe]] = {}


def engine_probes(engine: str) -> Mapping[str, Probe]:
    """At least the probes of `engine`, importing only the modules registering them."""
    ready = _READY.get(engine)
    if ready is not None:
        return ready
    modules = ENGINE_MODULES.get(engine)
    if modules is None:
        return PROBES.load()
    got = _READY[engine] = PROBES.load_only(f"dbwatch.probes.{m}" for m in modules)
    return got


def probe(
    name: str,
    engine: str,
    grant: str | None = None,
    with_config: bool = False,
    ttl: float = 0.0,
    server_wide: bool = False,
    with_cache: bool = False,
) -> Callable[[F], F]:
    """Register the decorated function as the probe filling section `name`."""

    def deco(fn: F) -> F:
        PROBES.add(name, Probe(name, engine, fn, grant, with_config, ttl, server_wide, with_cache))
        return fn

    return deco
