"""Command line: the only place that turns exceptions into messages and exit codes."""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn, cast

from . import __version__
from .commands import COMMANDS
from .errors import ConfigError, DbwatchError, TargetError
from .termout import HelpFormatter

DESCRIPTION = """\
diagnostics and watchdog for databases used as job queues (PostgreSQL, MySQL, MariaDB):
InnoDB deadlocks, the xmin horizon, dead tuples, idle transactions, lock waits, queue tables;
every finding names the cause and the fix. Probes are read-only with short timeouts."""
# paragraphs are refilled to COLUMNS (termout.HelpFormatter): one blank line between items
EPILOG = """\
exit status (Nagios): 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (unreachable, refused, bad input)

environment: DBWATCH_CONFIG, DBWATCH_TARGETS, COLUMNS (output width), NO_COLOR

'dbwatch COMMAND --help' for each command; the man page: python -m dbwatch.manpage | man -l -"""


Run = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """Argument errors: one line on stderr and exit 3 (UNKNOWN), not argparse's usage and 2."""

    def error(self, message: str) -> NoReturn:
        where = self.prog.removeprefix("dbwatch").strip()
        prefix = f"dbwatch: {where}: " if where else "dbwatch: "
        self.exit(3, f"{prefix}{message} (see --help)\n")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; given the command line, only the command it names is imported and
    given its arguments (the others are listed with their help from COMMANDS), so `--version` and one audit do not
    import every command's dependencies."""
    only = _command_of(argv) if argv is not None else None
    # the others are listed only in the top-level help (asked before the command): without
    # it, the command's own parser alone (each parser made costs ~0.1 ms)
    listed = not only or _help_before(argv or (), only)
    parser = _Parser(
        prog="dbwatch",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"dbwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for cmd in COMMANDS.values():
        if only is not None and cmd.name != only:  # listed, not imported
            if listed:
                sub.add_parser(cmd.name, help=cmd.help, add_help=False)
            continue
        p = sub.add_parser(cmd.name, help=cmd.help, formatter_class=HelpFormatter)
        mod = cmd.load()
        mod.add_arguments(p)
        p.set_defaults(func=mod.run)
        if cmd.whole_parser:  # the completion script is generated from this parser
            p.set_defaults(root_parser=parser)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The command the line names ("" for none: --version, --help), None when the whole
    parser is needed (the completion script lists every command's options)."""
    for arg in argv:
        if arg.startswith("-"):
            continue
        cmd = COMMANDS.get(arg)
        return None if cmd is None or cmd.whole_parser else arg
    return ""


def _help_before(argv: Sequence[str], command: str) -> bool:
    """-h/--help before the command: the top-level help, which lists every command."""
    for arg in argv:
        if arg == command:
            return False
        if arg in ("-h", "--help") or (arg.startswith("--h") and "--help".startswith(arg)):
            return True
    return False


def arg_flag(args: argparse.Namespace, name: str) -> bool:
    value: object = getattr(args, name, False)
    return bool(value)


def _setup_logging(debug: bool) -> None:
    import logging  # here, not at the top: `--version` needs no logging (startup)

    from .targets.secrets import install_log_filter

    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="dbwatch: %(levelname)s %(name)s: %(message)s",
    )
    install_log_filter()  # no password ever reaches a log line


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if not gc.isenabled() and not _gc_may_stay_off(args):
        gc.enable()  # off only from _entry() (the process's start), for what may keep it off
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
            import traceback

            print(scrub(traceback.format_exc()), file=sys.stderr, end="")
            return 3
        print(
            scrub(f"dbwatch: internal error: {type(exc).__name__}: {exc} (rerun with --debug)"),
            file=sys.stderr,
        )
        return 3


def _gc_may_stay_off(args: argparse.Namespace) -> bool:
    """An audit of one named target without logs (a cron or Nagios check): what it allocates
    is mostly the modules it imports, never garbage, and the cyclic collector, walking them
    every ~700 allocations, cost 10-15 ms of its ~200; the cycles it leaves are a few hundred
    objects (argparse's), freed at exit. Anything longer or bigger — the daemon, log
    analysis, several targets — runs with the collector on."""
    targets: object = getattr(args, "targets", None)
    return (
        getattr(args, "command", None) == "audit"
        and not getattr(args, "log", None)
        and isinstance(targets, list)
        and len(targets) == 1
    )


def _entry() -> NoReturn:
    """The process's entry (the `dbwatch` script, `python -m dbwatch`): main, then exit. The
    cyclic collector is off while the command line is read and its command imported, and
    stays off for a one-target audit (_gc_may_stay_off)."""
    gc.disable()
    code = main()
    # The process ends here: leave its heap to the OS. Every object is moved out of the cyclic
    # collector's reach, so the interpreter's exit does not walk and free each module's
    # objects (modules and their functions are cycles only that collector frees): ~30 ms of
    # a one-shot audit's CPU. atexit handlers, stream flushing and plain refcount frees still run.
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    _entry()
