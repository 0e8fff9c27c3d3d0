"""The commands: one module per command (`add_arguments(parser)`, `run(args)`), registered
here with the one-line help `dbwatch --help` lists. The parser names every command but
imports only the module of the one the line runs (startup: `--version` imports none).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, cast

from ..registry import Registry

if TYPE_CHECKING:  # a Protocol class costs ~0.5 ms to make: `--version` needs none
    import argparse
    from typing import Protocol

    class CommandModule(Protocol):
        """What every dbwatch/commands/<name>.py provides (imported when its parser is built)."""

        def add_arguments(self, p: argparse.ArgumentParser) -> None: ...

        def run(self, args: argparse.Namespace) -> int: ...


class Command:
    """A registered command (a plain class: a NamedTuple costs an eval to make)."""

    __slots__ = ("help", "name", "whole_parser")

    def __init__(self, name: str, help: str, whole_parser: bool = False) -> None:
        self.name = name  # also its module: dbwatch/commands/<name>.py
        self.help = help  # the line `dbwatch --help` lists
        self.whole_parser = whole_parser  # its parser needs every command's arguments

    def __repr__(self) -> str:
        return f"Command({self.name!r}, {self.help!r}, {self.whole_parser!r})"

    def load(self) -> CommandModule:
        return cast("CommandModule", importlib.import_module(f"{__name__}.{self.name}"))


# Declared here, not by their modules, so the list costs no import; in `dbwatch --help` order.
COMMANDS: Registry[Command] = Registry("command")


def command(name: str, help: str, whole_parser: bool = False) -> Command:
    """Register the command `name`, implemented by dbwatch/commands/<name>.py."""
    return COMMANDS.add(name, Command(name, help, whole_parser))


command("audit", "one pass of every selected rule over every target")
command(
    "deadlocks",
    "parse and diagnose deadlocks (live, --file, --error-log/--log, --history, --summary)",
)
command("terminate", "find offending sessions and (only with --execute) cancel or terminate them")
command("watch", "the watchdog daemon: probe every target on its interval, alert, act")
command("status", "what the daemon has firing now and each target's last cycle (Nagios exit code)")
command(
    "history", "what fired, resolved and was done, and the deadlocks, over a window (--since 24h)"
)
command("rules", "list the rule catalogue")
command("explain", "one rule's full text")
command("config", "configuration commands")
command(
    "completion",
    "print a bash or zsh completion script (eval it or save it; see --help)",
    whole_parser=True,
)
