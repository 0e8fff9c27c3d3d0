"""Command line: the only place that turns exceptions into messages and exit codes."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__
from .errors import ConfigError, DbwatchError, TargetError

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
EPILOG = """\
exit status (Nagios): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (unreachable, refused, bad input)
environment: DBWATCH_CONFIG, DBWATCH_TARGETS, COLUMNS (table width), NO_COLOR
'dbwatch COMMAND --help' for each command; the man page: python -m dbwatch.manpage | man -l -"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dbwatch",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"dbwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        mod = importlib.import_module(f"dbwatch.commands.{name}")
        p = sub.add_parser(name, help=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(func=mod.run)
        if name == "rules":
            e = sub.add_parser("explain", help="one rule's full text")
            mod.add_explain_arguments(e)
            e.set_defaults(func=mod.run_explain)
    return parser


def _setup_logging(debug: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="dbwatch: %(levelname)s %(name)s: %(message)s",
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    if not getattr(args, "_logging_done", False):
        _setup_logging(debug)
    try:
        return int(args.func(args))
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"dbwatch: config error: {problem}", file=sys.stderr)
        return 3
    except TargetError as exc:
        print(f"dbwatch: {exc}", file=sys.stderr)
        return 3
    except DbwatchError as exc:
        print(f"dbwatch: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("dbwatch: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the last line of defence: one line, no traceback
        if debug:
            raise
        print(
            f"dbwatch: internal error: {type(exc).__name__}: {exc} (rerun with --debug)",
            file=sys.stderr,
        )
        return 3


def _entry() -> Any:
    sys.exit(main())


if __name__ == "__main__":
    _entry()
