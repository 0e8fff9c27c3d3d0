"""Command line: the only place that turns exceptions into messages and exit codes."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import NoReturn, Protocol, cast

from . import __version__
from .errors import ConfigError, DbwatchError, TargetError
from .termout import HelpFormatter

log = logging.getLogger("dbwatch")
# Every command lives in dbwatch/commands/<name>.py with HELP, add_arguments(parser) and run(args).
COMMANDS = (
    "audit",
    "deadlocks",
    "terminate",
    "watch",
    "status",
    "history",
    "rules",
    "config",
    "completion",
)
DESCRIPTION = """\
diagnostics and watchdog for databases used as job queues (PostgreSQL, MySQL, MariaDB):
InnoDB deadlocks, the xmin horizon, dead tuples, idle transactions, lock waits, queue tables;
every finding names the cause and the fix. Probes are read-only with short timeouts."""
# paragraphs are refilled to COLUMNS (termout.HelpFormatter): one blank line between items
EPILOG = """\
exit status (Nagios): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (unreachable, refused, bad input)

environment: DBWATCH_CONFIG, DBWATCH_TARGETS, COLUMNS (output width), NO_COLOR

'dbwatch COMMAND --help' for each command; the man page: python -m dbwatch.manpage | man -l -"""


# Each command's one-line help, for `dbwatch --help` without importing every command (startup:
# a command imports only its own module; tests/test_startup.py checks these match HELP).
HELPS = {
    "audit": "one pass of every selected rule over every target",
    "deadlocks": "parse and diagnose deadlocks (live, --file, --error-log/--log, --history, "
    "--summary)",
    "terminate": "find offending sessions and (only with --execute) cancel or terminate them",
    "watch": "the watchdog daemon: probe every target on its interval, alert, act",
    "status": "what the daemon has firing now and each target's last cycle (Nagios exit code)",
    "history": "what fired, resolved and was done, and the deadlocks, over a window (--since 24h)",
    "rules": "list the rule catalogue",
    "config": "configuration commands",
    "completion": "print a bash or zsh completion script (eval it or save it; see --help)",
    "explain": "one rule's full text",
}
# the commands whose parser needs every command's arguments (the completion script)
WHOLE = ("completion",)

Run = Callable[[argparse.Namespace], int]


class CommandModule(Protocol):
    """What every dbwatch/commands/<name>.py provides (imported when the parser is built)."""

    HELP: str

    def add_arguments(self, p: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


class _Parser(argparse.ArgumentParser):
    """Argument errors: one line on stderr and exit 3 (UNKNOWN), not argparse's usage and 2."""

    def error(self, message: str) -> NoReturn:
        where = self.prog.removeprefix("dbwatch").strip()
        prefix = f"dbwatch: {where}: " if where else "dbwatch: "
        self.exit(3, f"{prefix}{message} (see --help)\n")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; given the command line, only the command it names is imported and
    given its arguments (the others are listed by HELPS), so `--version` and one audit do not
    import every command's dependencies."""
    only = _command_of(argv) if argv is not None else None
    parser = _Parser(
        prog="dbwatch",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"dbwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        if only is not None and name != only and not (name == "rules" and only == "explain"):
            sub.add_parser(name, help=HELPS[name], add_help=False)
            if name == "rules":
                sub.add_parser("explain", help=HELPS["explain"], add_help=False)
            continue
        mod = cast(CommandModule, importlib.import_module(f"dbwatch.commands.{name}"))
        p = sub.add_parser(name, help=mod.HELP, formatter_class=HelpFormatter)
        mod.add_arguments(p)
        p.set_defaults(func=mod.run)
        if name == "completion":  # the script is generated from this parser
            p.set_defaults(root_parser=parser)
        if name == "rules":
            from .commands import rules

            e = sub.add_parser("explain", help=HELPS["explain"], formatter_class=HelpFormatter)
            rules.add_explain_arguments(e)
            e.set_defaults(func=rules.run_explain)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The command the line names ("" for none: --version, --help), None when the whole
    parser is needed (the completion script lists every command's options)."""
    for arg in argv:
        if arg.startswith("-"):
            continue
        return None if arg in WHOLE or arg not in HELPS else arg
    return ""


def arg_flag(args: argparse.Namespace, name: str) -> bool:
    value: object = getattr(args, name, False)
    return bool(value)


def _setup_logging(debug: bool) -> None:
    from .targets.secrets import install_log_filter

    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="dbwatch: %(levelname)s %(name)s: %(message)s",
    )
    install_log_filter()  # no password ever reaches a log line


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    debug = arg_flag(args, "debug")
    if not arg_flag(args, "_logging_done"):
        _setup_logging(debug)
    func: object = getattr(args, "func", None)
    from .targets.secrets import scrub

    try:
        if not callable(func):
            parser.error("a command is required")
        return int(cast(Run, func)(args))
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"dbwatch: config error: {problem}", file=sys.stderr)
        return 3
    except TargetError as exc:
        print(scrub(f"dbwatch: {exc}"), file=sys.stderr)
        return 3
    except DbwatchError as exc:
        print(scrub(f"dbwatch: {exc}"), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("dbwatch: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, no traceback
        if debug:  # the traceback, scrubbed like every other output
            print(scrub(traceback.format_exc()), file=sys.stderr, end="")
            return 3
        print(
            scrub(f"dbwatch: internal error: {type(exc).__name__}: {exc} (rerun with --debug)"),
            file=sys.stderr,
        )
        return 3


def _entry() -> NoReturn:
    sys.exit(main())


if __name__ == "__main__":
    _entry()
