"""The daemon's view of its config and rules: built (validated) at start and on SIGHUP."""

from __future__ import annotations

from pathlib import Path

from ..alerts.router import Policy
from ..catalogue import Rule, load_catalogue
from ..config import Config, TargetConfig, load_config
from ..errors import ConfigError, TargetError
from ..frozen import frozen
from ..targets import TargetSpec, spec_from_config


@frozen
class Setup:
    """One consistent view of config and rules; swapped whole on reload."""

    catalogue: dict[str, Rule]
    config: Config
    targets: dict[str, tuple[TargetSpec, TargetConfig]]
    policies: tuple[Policy, ...]

    def for_seconds(self, rule: str) -> float:
        override = self.config.rules.get(rule)
        return (override.for_seconds or 0.0) if override is not None else 0.0


def load_setup(path: Path | None) -> Setup:
    """Config and rules, validated; raises ConfigError with every problem."""
    catalogue = load_catalogue()
    config = load_config(path, catalogue)
    problems: list[str] = []
    targets: dict[str, tuple[TargetSpec, TargetConfig]] = {}
    for t in config.targets:
        try:
            targets[t.name] = (spec_from_config(t), t)  # the same builder as audit
        except TargetError as exc:
            problems.append(f"{path}: targets.{t.name}.url: {exc.detail}")
    if not targets and not problems:
        problems.append(f"{path or 'no config file'}: no [[targets]] to watch")
    if problems:
        raise ConfigError(problems)
    return Setup(catalogue, config, targets, tuple(Policy.of(a) for a in config.alerts))


def share_ttl(setup: Setup) -> float:
    """Server-wide probe results serve the server's targets for half the shortest interval,
    so each runs about twice an interval however many databases of that server are watched."""
    intervals = [tc.interval for _, tc in setup.targets.values()]
    return max(1.0, min(intervals, default=15.0) / 2.0)
