"""The dbwatch(1) man page, generated from the argument parser so it never drifts from it.

python -m dbwatch.manpage > docs/dbwatch.1 && man -l docs/dbwatch.1
"""

from __future__ import annotations

import argparse
import datetime
import sys

from . import __version__

DESCRIPTION = """Diagnostics and watchdog for the databases that applications also use as job queues
(Laravel's jobs table above all; Que, GoodJob, Delayed::Job, Oban, River, Solid Queue).
It reads what PostgreSQL and MySQL/MariaDB already know — InnoDB deadlocks, the xmin
horizon, dead tuples, idle-in-transaction sessions, lock waits, queue tables — and turns it
into findings a paged DBA can act on: what is wrong, who causes it, and the exact fix.
Every probe is read-only, in autocommit, labelled dbwatch, with short timeouts."""

SECTIONS = (
    (
        "TARGETS",
        """A TARGET is a URL \\(em postgresql:// (or postgres://), mysql:// (or mariadb://), e.g.
mysql://monitor:pw@db2:3306/app \\(em or the name of a target in the config. libpq environment
variables and service files work for PostgreSQL, ~/.my.cnf for MySQL. A URL naming a database
scopes per-database rules to it.""",
    ),
    (
        "EXIT STATUS",
        """Nagios plugin convention:
.TP
.B 0
OK
.TP
.B 1
WARNING
.TP
.B 2
CRITICAL
.TP
.B 3
UNKNOWN: a target unreachable, a probe refused, bad config or arguments, a stale daemon
.PP
With several outcomes: 2 if anything is critical, else 3 if anything could not be read,
else 1 if any warning, else 0.""",
    ),
    (
        "ENVIRONMENT",
        """.TP
.B DBWATCH_CONFIG
config file when --config is not given (else ./dbwatch.toml)
.TP
.B DBWATCH_TARGETS
space-separated target URLs for audit without a config
.TP
.B COLUMNS
width of tables (else the terminal's)
.TP
.B NO_COLOR
no colour even on a terminal (colour is never used when output is piped)
.TP
.B XDG_STATE_HOME
where the daemon keeps its state (dbwatch/state.db)""",
    ),
    (
        "FILES",
        """.TP
.I ./dbwatch.toml
the configuration (TOML; ${VAR} from the environment); see contrib/dbwatch.example.toml
.TP
.I $XDG_STATE_HOME/dbwatch/state.db
the daemon's state: findings, alerts, deadlocks, actions, history""",
    ),
    (
        "EXAMPLES",
        """.nf
dbwatch audit postgresql://monitor@db1/app mysql://monitor:$PW@db2/app
dbwatch audit --config /etc/dbwatch/dbwatch.toml --format json
dbwatch deadlocks --error-log /var/log/mysql/error.log --summary
dbwatch terminate postgresql://admin@db1/app --idle-in-transaction --older-than 30m
dbwatch watch --config /etc/dbwatch/dbwatch.toml --http 127.0.0.1:9188
dbwatch status --config /etc/dbwatch/dbwatch.toml; echo $?
dbwatch history --since 24h
eval "$(dbwatch completion bash)"
.fi""",
    ),
)


def _esc(text: str) -> str:
    out = text.replace("\\", "\\e").replace("-", "\\-")
    out = out.replace("—", "\\(em").replace("–", "\\(en").replace("…", "...")
    return "\n".join("\\&" + ln if ln.startswith((".", "'")) else ln for ln in out.splitlines())


def _options(p: argparse.ArgumentParser) -> list[str]:
    out = []
    for act in p._actions:  # argparse has no public walk over actions
        if act.help == argparse.SUPPRESS or isinstance(act, argparse._HelpAction):
            continue
        if act.option_strings:
            metavar = ""
            if act.nargs != 0:
                metavar = " " + (
                    act.metavar
                    if isinstance(act.metavar, str)
                    else ("{" + ",".join(act.choices) + "}" if act.choices else act.dest.upper())
                )
            flags = ", ".join(f"\\fB{_esc(o)}\\fR" for o in act.option_strings)
            out += [".TP", flags + (f"\\fI{_esc(metavar)}\\fR" if metavar else "")]
        else:
            name = act.metavar if isinstance(act.metavar, str) else act.dest.upper()
            out += [".TP", f"\\fI{_esc(name)}\\fR"]
        out.append(_esc(act.help or ""))
    return out


def _usage(p: argparse.ArgumentParser) -> str:
    """The usage at a fixed 80 columns: the page must not depend on the COLUMNS it was built in."""
    fmt = argparse.HelpFormatter(prog=p.prog, width=80)
    fmt.add_usage(p.usage, p._actions, p._mutually_exclusive_groups)
    return fmt.format_help().strip()


def render(parser: argparse.ArgumentParser, date: str | None = None) -> str:
    date = date or datetime.date.today().isoformat()
    lines = [
        f'.TH DBWATCH 1 "{date}" "dbwatch {__version__}" "User Commands"',
        ".SH NAME",
        "dbwatch \\- diagnostics and watchdog for databases used as job queues",
        ".SH SYNOPSIS",
        ".B dbwatch",
        "[\\fB\\-\\-version\\fR] \\fICOMMAND\\fR [\\fIoptions\\fR]",
        ".SH DESCRIPTION",
        _esc(DESCRIPTION),
        ".SH COMMANDS",
    ]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in sub._choices_actions}
    for name, p in sub.choices.items():
        lines += [".SS " + f'"dbwatch {name}"', _esc(helps.get(name) or "")]
        lines += [".PP", ".nf", _esc(_usage(p)), ".fi"]
        lines += _options(p)
        if p.epilog:
            lines += [".PP", ".nf", _esc(p.epilog), ".fi"]
    for title, body in SECTIONS:
        lines += [".SH " + title, body]
    lines += [
        ".SH SEE ALSO",
        "dbwatch explain ID; README.md; the dashboard of dbwatch watch \\-\\-http",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    from .cli import build_parser

    sys.stdout.write(render(build_parser()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
