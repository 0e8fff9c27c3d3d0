"""`dbwatch config check`: validate config and rules, printing every error with file and key."""

from __future__ import annotations

import argparse

from ..durations import plural
from ..targets import spec_for
from .common import add_common, load_all


def add_arguments(c: argparse.ArgumentParser) -> None:
    csub = c.add_subparsers(dest="config_command", metavar="check")
    csub.required = True
    cc = csub.add_parser("check", help="validate config and rules; print every error")
    add_common(cc)
    cc.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    catalogue, config = load_all(args.config)
    for t in config.targets:
        spec_for(t.url, t.name)  # validates the scheme
    src = config.path or "no config file (defaults)"
    print(
        f"{src}: OK — {plural(len(config.targets), 'target')}, "
        f"{plural(len(config.rules), 'rule override')}, "
        f"{plural(len(config.alerts), 'alert receiver')}, "
        f"{plural(len(catalogue), 'rule')} in the catalogue"
    )
    return 0
