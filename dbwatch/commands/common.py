"""What every command shares: common options, loading config and catalogue, resolving targets."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence

from ..catalogue import Rule, load_catalogue
from ..config import Config, TargetConfig, find_config_path, load_config
from ..errors import UsageError
from ..evaluate import Selection
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


def add_all_databases(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--all-databases",
        action="store_true",
        help="widen a URL naming a database to every database (schema) of the server",
    )


def check_selection(selection: Selection, catalogue: dict[str, Rule]) -> None:
    """A --select/--ignore that leaves no rule to run is an error, never an empty OK."""
    if not any(not r.planned and selection.wants(r.id) for r in catalogue.values()):
        chosen = ",".join(selection.select) or "every rule"
        ignored = f" minus {','.join(selection.ignore)}" if selection.ignore else ""
        raise UsageError(
            f"--select {chosen}{ignored} leaves no rule to run (see `dbwatch rules` for the IDs)"
        )


def resolve_targets(
    names: Sequence[str],
    config: Config,
    say: bool = True,
    password_file: str | None = None,
    all_databases: bool = False,
) -> list[TargetSpec]:
    """URLs or configured names; else the config's targets; else DBWATCH_TARGETS / local defaults.
    Configured targets are built by targets.spec_from_config, as in the daemon; --password-file
    applies to every target; --all-databases widens every target's scope to every database."""
    specs = _resolve(names, config, say)
    specs = [with_password_file(s, password_file) for s in specs]
    if all_databases:
        specs = [dataclasses.replace(s, all_databases=True) for s in specs]
    return specs


def _resolve(names: Sequence[str], config: Config, say: bool) -> list[TargetSpec]:
    by_name: dict[str, TargetConfig] = {t.name: t for t in config.targets}
    if names:
        for n in names:
            if n not in by_name and "://" not in n:  # neither a configured name nor a URL
                known = ", ".join(sorted(by_name)[:20]) or "none"
                raise UsageError(
                    f"no target named {n}: give a postgresql:// or mysql:// URL or a "
                    f"configured target name (configured: {known})"
                )
        return [spec_from_config(by_name[n]) if n in by_name else spec_for(n) for n in names]
    if config.targets:
        return [spec_from_config(t) for t in config.targets]
    specs = default_targets()
    if say:
        src = "DBWATCH_TARGETS" if os.environ.get("DBWATCH_TARGETS") else "local defaults"
        print(
            f"dbwatch: no target given; trying {src}: {', '.join(s.name for s in specs)}",
            file=sys.stderr,
        )
    return specs


def arg_str(args: argparse.Namespace, name: str) -> str | None:
    """An option's value as text (None when absent or empty-valued)."""
    value: object = getattr(args, name, None)
    return value if isinstance(value, str) else None


def arg_int(args: argparse.Namespace, name: str, default: int = 0) -> int:
    value: object = getattr(args, name, None)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def arg_list(args: argparse.Namespace, name: str) -> list[str]:
    """A repeatable or nargs option's values as text ([] when absent)."""
    value: object = getattr(args, name, None)
    if isinstance(value, list):
        return [str(v) for v in value]
    return []


def arg_flag(args: argparse.Namespace, name: str) -> bool:
    value: object = getattr(args, name, False)
    return bool(value)
