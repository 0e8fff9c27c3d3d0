"""Snapshot: everything the probes read from one target in one cycle (frozen, JSON-able).

A section is None when its probe failed or was not run: checks needing it report
unknown (DW001), never a silent OK.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import InitVar, asdict, field, is_dataclass
from typing import TypeVar, cast

from ..frozen import frozen
from .sections import SECTIONS, SectionKey
from .sections import build as _build
from .values import JSON, as_json

T = TypeVar("T")


def load_sections() -> None:
    """Import the section families so their sections register (once per process)."""
    SECTIONS.load()


def build_section(name: str, data: object) -> object:
    """The section's typed data (None stays None; an unregistered one is kept as is)."""
    return _build(name, data)


@frozen
class ProbeFailure:
    probe: str
    message: str
    grant: str | None = None
    privilege: bool = False
    fix: str | None = None  # what to do when it is not a missing privilege


@frozen
class CoverageGap:
    """Something a probe did not examine (DW002): a table past a cap, a time budget hit,
    an object the user cannot see. `name` names it (schema.table, database, probe)."""

    kind: str  # "queue_table" | "database" | "probe" | "time_budget" | ...
    name: str
    reason: str  # one line: why it was not examined and, where known, how to fix it


@frozen
class Snapshot:
    target: str  # the target's name (never its password)
    engine: str  # postgresql | mysql | mariadb
    server_version: str  # as the server says it
    version_num: int  # PG: server_version_num; MySQL/MariaDB: 80036 / 101106
    taken_at: float  # unix time of the probe start
    sections: dict[str, object] = field(default_factory=dict)
    failures: tuple[ProbeFailure, ...] = ()
    features: frozenset[str] = frozenset()  # detected by query: "skip_locked", "performance_schema"
    gaps: tuple[CoverageGap, ...] = ()  # what was not examined (DW002)
    scope: str | None = None  # the database per-database rules are limited to; None = all
    # the models derived from the sections (lock graph, horizon holders), built once on first
    # use and shared by every check, terminate and the figures; not data (not in to_dict)
    _models: dict[str, object] = field(default_factory=dict, init=False, repr=False, compare=False)
    # run_probes: every section was built already, at the probe boundary (not a field)
    built: InitVar[bool] = False

    def __post_init__(self, built: bool) -> None:
        # every section typed once, whoever built the snapshot (probes, tests, the daemon)
        if built:
            return
        typed = {name: build_section(name, data) for name, data in self.sections.items()}
        object.__setattr__(self, "sections", typed)

    @classmethod
    def of_built(
        cls,
        target: str,
        engine: str,
        server_version: str,
        version_num: int,
        taken_at: float,
        sections: dict[str, object],
        failures: tuple[ProbeFailure, ...],
        features: frozenset[str],
        gaps: tuple[CoverageGap, ...],
        scope: str | None,
    ) -> Snapshot:
        """`Snapshot(..., built=True)` (run_probes: every section built at the probe
        boundary) with its fields set in one step, not one object.__setattr__ call each as
        the generated __init__ of a frozen dataclass does (a third of the time, each daemon
        cycle). tests/test_pgwire.py checks it against the constructor, field by field."""
        snap = object.__new__(cls)
        snap.__dict__.update(
            target=target,
            engine=engine,
            server_version=server_version,
            version_num=version_num,
            taken_at=taken_at,
            sections=sections,
            failures=failures,
            features=features,
            gaps=gaps,
            scope=scope,
            _models={},
        )
        return snap

    def get(self, key: SectionKey[T]) -> T | None:
        """The section's typed data, or None if the probe failed or was not run."""
        data = self.sections.get(key.name)
        return None if data is None else key.build(data)

    def model(self, name: str, build: Callable[[Snapshot], T]) -> T:
        """This snapshot's model `name`, built by `build` on first use and the same object for
        every later caller (who must not change it). Two threads asking at once may both
        build; the first stored wins."""
        try:
            return cast(T, self._models[name])
        except KeyError:
            return cast(T, self._models.setdefault(name, build(self)))

    def has(self, name: str) -> bool:
        return self.sections.get(name) is not None

    def unavailable(self) -> list[str]:
        """Sources switched off on the server (not failures): a section that is
        `Unavailable` (reason, fix). One line each, duplicates merged, for the target line
        and JSON."""
        from .statements import Unavailable

        out = {d.note(): None for d in self.sections.values() if isinstance(d, Unavailable)}
        return list(out)

    def to_dict(self) -> dict[str, JSON]:
        return {
            "target": self.target,
            "engine": self.engine,
            "server_version": self.server_version,
            "version_num": self.version_num,
            "taken_at": self.taken_at,
            "sections": {n: _jsonable(d) for n, d in self.sections.items()},
            "failures": as_json([asdict(f) for f in self.failures]),
            "features": as_json(sorted(self.features)),
            "gaps": as_json([asdict(g) for g in self.gaps]),
            "scope": self.scope,
        }


def _jsonable(data: object) -> JSON:
    if is_dataclass(data) and not isinstance(data, type) and not hasattr(data, "to_json"):
        return as_json(asdict(data))
    if isinstance(data, tuple):
        return [_jsonable(r) for r in data]
    return as_json(data)
