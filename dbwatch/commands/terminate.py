"""`dbwatch terminate`: select offenders by ANDed criteria, dry run unless --execute."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter

from ..actions.guards import Criteria, Decision, Policy, statement_for
from ..catalogue import Rule
from ..config import Config
from ..durations import format_duration, parse_duration
from ..errors import TargetError, UsageError
from ..findings import Finding
from ..targets import TargetSpec
from ..termout import HelpFormatter, chop, fit_table, hanging, term_width
from .common import add_all_databases

EPILOG = """\
Criteria are ANDed: a session is selected only when every given criterion holds
(--older-than 5m --idle-in-transaction = idle in a transaction that is at least 5m old).
--match-*/--ignore-* take Python regexes searched anywhere in the value (anchor with ^…$).
At least one criterion, --rollback-prepared or --drop-slot is required.

Never touched (listed as skipped_protected with the reason): dbwatch's own connections
(recognised by connection id, not by name: a session calling itself "dbwatch" is not
protected), superusers (unless --include-superusers), replication/walsender, system
processes and background workers, autovacuum, pg_dump/mysqldump and other dump/backup
statements (unless --include-backups), --protect-user/--protect-app and the config's
[terminate] protect_users/protect_apps. On MySQL/MariaDB without performance_schema
(MariaDB's default) client program names are unknown, so a session whose transaction has
written nothing may be a dump between two statements: it is skipped with that reason.
--ignore-user/--ignore-app drop sessions from the list silently instead.
Prepared transactions and replication slots are never ended as a side effect: with
--holding-xmin they are listed with the statement that ends them; only --rollback-prepared
GID / --drop-slot NAME (with --execute) run it.

Scope: on PostgreSQL only sessions of the URL's database are candidates, unless
--all-databases or the target key all_databases = true. --holding-xmin selects exactly
the holders PG201 reports (same model, thresholds and [rules.PG201] overrides as audit).

PostgreSQL kills re-check pid, backend_start and xact_start in the same statement.
MySQL/MariaDB kills re-establish the identity from live sources (PROCESSLIST and the
InnoDB transaction list of SHOW ENGINE INNODB STATUS, never the cached INNODB_TRX); on
MariaDB the KILL runs only if the thread has started no statement since. A session that
changed in between, or whose identity cannot be established, is reported as gone.

--format json prints a JSON array, one object per candidate: action (would_terminate,
would_cancel, terminated, cancelled, skipped_protected, gone, failed), target, pid or
thread_id, database, user, application, host, age, state, query, reason, statement, error.

Exit status: 0 done (or dry run), 1 an action failed, 3 a target was unreachable or bad input.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from .common import add_common, add_password_file

    p.formatter_class = HelpFormatter
    p.epilog = EPILOG
    p.add_argument("targets", nargs="*", metavar="TARGET", help="URL or configured target name")
    add_common(p)
    add_password_file(p)
    c = p.add_argument_group("criteria (ANDed)")
    c.add_argument("--older-than", metavar="DUR", help="transaction at least this old (30s, 5m)")
    c.add_argument(
        "--idle-in-transaction",
        action="store_true",
        help="idle with a transaction open (MySQL: Sleep with an InnoDB trx)",
    )
    c.add_argument(
        "--holding-xmin",
        action="store_true",
        help="PostgreSQL: holds its database's xmin horizon (PG201)",
    )
    c.add_argument(
        "--blocking", action="store_true", help="root of a lock-wait chain (PG101/MY101)"
    )
    for what in ("user", "app"):
        c.add_argument(f"--match-{what}", metavar="REGEX", help=f"{what} matches")
        c.add_argument(f"--ignore-{what}", metavar="REGEX", help=f"leave out when {what} matches")
    c.add_argument("--match-host", metavar="REGEX", help="client host/address matches")
    c.add_argument("--match-query", metavar="REGEX", help="current/last query text matches")
    g = p.add_argument_group("guards and actions")
    g.add_argument(
        "--protect-user",
        action="append",
        default=[],
        metavar="NAME",
        help="never touch this user (repeatable; beside protect_users)",
    )
    g.add_argument(
        "--protect-app",
        action="append",
        default=[],
        metavar="NAME",
        help="never touch this application name (repeatable)",
    )
    g.add_argument("--include-superusers", action="store_true")
    g.add_argument("--include-backups", action="store_true", help="allow pg_dump/mysqldump")
    g.add_argument("--cancel", action="store_true", help="cancel the query only, keep the session")
    g.add_argument("--limit", type=_nonneg, metavar="N", help="at most N actions per target")
    g.add_argument("--rollback-prepared", action="append", default=[], metavar="GID")
    g.add_argument("--drop-slot", action="append", default=[], metavar="NAME")
    g.add_argument("--execute", action="store_true", help="act; without it, a dry run")
    p.add_argument("--format", "-f", choices=("table", "json"), default="table")
    add_all_databases(p)


def _nonneg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _arg(args: argparse.Namespace, name: str) -> object:
    """One parsed option, as object: the helpers below narrow it."""
    value: object = getattr(args, name, None)
    return value


def _str(args: argparse.Namespace, name: str) -> str | None:
    value = _arg(args, name)
    return None if value is None else str(value)


def _flag(args: argparse.Namespace, name: str) -> bool:
    return bool(_arg(args, name))


def _strs(args: argparse.Namespace, name: str) -> list[str]:
    value = _arg(args, name)
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []


def _regex(args: argparse.Namespace, name: str) -> re.Pattern[str] | None:
    raw = _str(args, name)
    if raw is None:
        return None
    try:
        return re.compile(raw)
    except re.error as exc:
        raise UsageError(f"--{name.replace('_', '-')}: bad regex {raw!r}: {exc}") from None


def criteria_from(args: argparse.Namespace) -> Criteria:
    older = None
    text = _str(args, "older_than")
    if text is not None:
        try:
            older = parse_duration(text)
        except ValueError as exc:
            raise UsageError(f"--older-than: {exc}") from None
    names = ("match_user", "ignore_user", "match_app", "ignore_app", "match_host", "match_query")
    return Criteria(
        older_than=older,
        idle_in_transaction=_flag(args, "idle_in_transaction"),
        holding_xmin=_flag(args, "holding_xmin"),
        blocking=_flag(args, "blocking"),
        **{n: _regex(args, n) for n in names},
    )


def run(args: argparse.Namespace) -> int:
    from ..actions.terminate import Request, run_target
    from .common import load_all, resolve_targets

    criteria = criteria_from(args)
    prepared, slots = _strs(args, "rollback_prepared"), _strs(args, "drop_slot")
    execute = _flag(args, "execute")
    limit = _arg(args, "limit")
    if not (criteria.given or prepared or slots):
        raise UsageError(
            "terminate: give at least one criterion (e.g. --idle-in-transaction "
            "--older-than 5m); see dbwatch terminate --help"
        )
    catalogue, config = load_all(_str(args, "config"))
    policy = Policy.from_config(
        config.terminate,
        _strs(args, "protect_user"),
        _strs(args, "protect_app"),
        _flag(args, "include_superusers"),
        _flag(args, "include_backups"),
        _flag(args, "cancel"),
    )
    req = Request(
        criteria,
        policy,
        limit if isinstance(limit, int) else None,
        execute,
        tuple(prepared),
        tuple(slots),
    )
    decisions: list[Decision] = []
    notes: list[str] = []
    unreachable = False
    for spec in resolve_targets(
        _strs(args, "targets"),
        config,
        password_file=_str(args, "password_file"),
        all_databases=_flag(args, "all_databases"),
    ):
        try:
            horizon = None
            if criteria.holding_xmin and spec.engine == "postgresql":
                horizon, why = pg201_findings(spec, catalogue, config)
                if why:
                    notes.append(f"{spec.name}: --holding-xmin selects nothing: {why}")
                    unreachable = True
            found, left_out = run_target(spec, req, horizon)
        except TargetError as exc:
            print(f"dbwatch: {exc}", file=sys.stderr)
            unreachable = True
            continue
        decisions += found
        if left_out:
            notes.append(f"{spec.name}: {left_out} more matched; left out by --limit {limit}")
        if criteria.holding_xmin and spec.engine == "mysql":
            notes.append(
                f"{spec.name}: --holding-xmin applies to PostgreSQL only; "
                "on MySQL/MariaDB select the oldest transaction with --older-than"
            )
    print(render(decisions, _str(args, "format") or "table", execute))
    for note in notes:
        print(f"dbwatch: {note}", file=sys.stderr)
    if unreachable:
        return 3
    return 1 if any(d.action == "failed" for d in decisions) else 0


def pg201_findings(
    spec: TargetSpec, catalogue: dict[str, Rule], config: Config
) -> tuple[list[Finding], str | None]:
    """PG201 on this target, exactly as `audit` evaluates it (its horizon-holder model, its
    thresholds and the config's overrides): --holding-xmin acts on these holders only."""
    from ..evaluate import Selection
    from ..pipeline import probe_target

    res = probe_target(spec, catalogue, config, Selection(("PG201",)))
    if res.error:
        raise TargetError(spec.name, res.error)
    if "PG201" not in res.evaluation.ran:
        why = res.evaluation.unknown.get("PG201", "PG201 could not be evaluated")
        return [], f"PG201 could not be evaluated ({why})"
    return [f for f in res.evaluation.findings if f.rule == "PG201"], None


def render(decisions: list[Decision], fmt: str, executed: bool) -> str:
    if fmt == "json":
        return json.dumps([d.to_dict() for d in decisions], indent=2, default=str)
    return table(decisions, executed)


def _cut(text: object, width: int) -> str:
    """Other sessions' query text only: bounded (targets, reasons and statements never are)."""
    s = " ".join(str(text or "").split())
    return s if len(s) <= width else s[: width - 1] + "…"


def _row(d: Decision) -> list[str]:
    s = d.session
    return [
        d.action,
        str(s.pid if s.pid is not None else (s.thread_id or s.name)),
        s.database or "-",
        s.user or "",
        s.application or s.host or "",
        format_duration(round(s.age, 1)) if s.age is not None else "-",
    ]


def _phrase(d: Decision) -> str | None:
    """Where its statement's framework tags say it comes from (the client's own name is in
    the APP/HOST column already)."""
    origin = d.to_dict().get("origin")
    if not isinstance(origin, dict) or origin.get("source") not in ("sqlcommenter", "marginalia"):
        return None
    return str(origin["phrase"]) if origin.get("phrase") else None


def _details(d: Decision, width: int) -> list[str]:
    """Its state, the reason, the statement that ends the session, its query and where the
    query's framework tags say it comes from, each wrapped whole under the row."""
    s = d.session
    state = s.state if not s.is_mysql else (s.command or s.state)
    reason = d.reason + (f" [{d.error}]" if d.error else "")
    out = hanging(state or "-", width, "  state: ", " " * 9)
    out += hanging(reason, width, "  reason: ", " " * 10)
    statement = statement_for(s, d.action)
    if statement:
        out += hanging(statement, width, "  statement: ", " " * 13)
    if s.query:
        out += hanging(chop(_cut(s.query, 300), width - 9), width, "  query: ", " " * 9)
    if phrase := _phrase(d):
        out += hanging(chop(_cut(phrase, 300), width - 7), width, "  from ", " " * 7)
    return out


def table(decisions: list[Decision], executed: bool, width: int | None = None) -> str:
    """Per target (its name on a line of its own, whole), one row per session within `width`
    (COLUMNS); under each row its state, reason, statement and query."""
    width = width or term_width()
    head = "" if executed else "DRY RUN: nothing was changed; add --execute to act.\n"
    if not decisions:
        return head + "No session matches the criteria."
    counts = Counter(d.action for d in decisions)
    summary = ", ".join(f"{n} {a}" for a, n in sorted(counts.items()))
    headers = ["ACTION", "PID/THREAD", "DATABASE", "USER", "APP/HOST", "AGE"]
    by_target: dict[str, list[Decision]] = {}
    for d in decisions:
        by_target.setdefault(d.session.target, []).append(d)
    parts = []
    for target, mine in by_target.items():
        rows, details = [_row(d) for d in mine], [_details(d, width) for d in mine]
        parts.append("\n".join([*hanging(target, width, "== ", "   "), ""]))
        parts[-1] += fit_table(headers, rows, width, details)
    return head + "\n\n".join(parts) + f"\n\n{summary}"
