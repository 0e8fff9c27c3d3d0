"""What every command shares: common options, loading config and catalogue, resolving targets."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence

from ..catalogue import Rule, load_catalogue
from ..config import Config, TargetConfig, find_config_path, load_config
from ..targets import TargetSpec, default_targets, spec_for


def prefixes(values: list[str] | None) -> tuple[str, ...]:
    out: list[str] = []
    for v in values or []:
        out += [p.strip().upper() for p in v.split(",") if p.strip()]
    return tuple(out)


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", help="config file (default: $DBWATCH_CONFIG, ./dbwatch.toml)")
    p.add_argument("--debug", action="store_true", help="log debug messages and show tracebacks")


def load_all(config_arg: str | None) -> tuple[dict[str, Rule], Config]:
    catalogue = load_catalogue()
    return catalogue, load_config(find_config_path(config_arg), catalogue)


def _with_config(spec: TargetSpec, target: TargetConfig) -> TargetSpec:
    """Per-target settings the probes read (queue retry_after)."""
    return dataclasses.replace(
        spec, retry_after=target.retry_after, all_databases=target.all_databases
    )


def resolve_targets(names: Sequence[str], config: Config, say: bool = True) -> list[TargetSpec]:
    """URLs or configured names; else the config's targets; else DBWATCH_TARGETS / local defaults."""
    by_name = {t.name: t for t in config.targets}
    if names:
        return [
            _with_config(spec_for(by_name[n].url, n), by_name[n]) if n in by_name else spec_for(n)
            for n in names
        ]
    if config.targets:
        return [_with_config(spec_for(t.url, t.name), t) for t in config.targets]
    specs = default_targets()
    if say:
        src = "DBWATCH_TARGETS" if os.environ.get("DBWATCH_TARGETS") else "local defaults"
        print(
            f"dbwatch: no target given; trying {src}: {', '.join(s.name for s in specs)}",
            file=sys.stderr,
        )
    return specs
