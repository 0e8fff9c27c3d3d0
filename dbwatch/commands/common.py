"""What every command shares: common options, loading config and catalogue, resolving targets."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ..catalogue import Rule, load_catalogue
from ..config import Config, TargetConfig, find_config_path, load_config
from ..targets import TargetSpec, default_targets, spec_for, spec_from_config, with_password_file


def prefixes(values: list[str] | None) -> tuple[str, ...]:
    out: list[str] = []
    for v in values or []:
        out += [p.strip().upper() for p in v.split(",") if p.strip()]
    return tuple(out)


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", help="config file (default: $DBWATCH_CONFIG, ./dbwatch.toml)")
    p.add_argument("--debug", action="store_true", help="log debug messages and show tracebacks")


def add_password_file(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--password-file",
        metavar="FILE",
        help="read the password from FILE's first line (keeps it out of ps and shell history)",
    )


def load_all(config_arg: str | None) -> tuple[dict[str, Rule], Config]:
    catalogue = load_catalogue()
    return catalogue, load_config(find_config_path(config_arg), catalogue)


def resolve_targets(
    names: Sequence[str], config: Config, say: bool = True, password_file: str | None = None
) -> list[TargetSpec]:
    """URLs or configured names; else the config's targets; else DBWATCH_TARGETS / local defaults.
    Configured targets are built by targets.spec_from_config, as in the daemon."""
    by_name: dict[str, TargetConfig] = {t.name: t for t in config.targets}
    if names:
        specs = [spec_from_config(by_name[n]) if n in by_name else spec_for(n) for n in names]
        return [with_password_file(s, password_file) for s in specs]
    if config.targets:
        specs = [spec_from_config(t) for t in config.targets]
        return [with_password_file(s, password_file) for s in specs]
    specs = [with_password_file(s, password_file) for s in default_targets()]
    if say:
        src = "DBWATCH_TARGETS" if os.environ.get("DBWATCH_TARGETS") else "local defaults"
        print(
            f"dbwatch: no target given; trying {src}: {', '.join(s.name for s in specs)}",
            file=sys.stderr,
        )
    return specs
