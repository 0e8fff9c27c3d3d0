"""`dbwatch audit`: one pass of every selected rule over every target (and query logs)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from ..evaluate import Selection
from ..findings import Finding
from ..pipeline import AuditResult, run_audit
from ..report import render
from ..targets import TargetSpec
from .common import (
    add_all_databases,
    add_common,
    add_password_file,
    arg_flag,
    arg_list,
    arg_str,
    check_selection,
    load_all,
    prefixes,
    resolve_targets,
)


def _n(n: int, word: str) -> str:
    """A count with thousands separators and its noun: `1 line`, `12,345 lines`."""
    return f"{n:,} {word if n == 1 else word + 's'}"


def add_arguments(a: argparse.ArgumentParser) -> None:
    a.add_argument("targets", nargs="*", metavar="TARGET", help="URL or configured target name")
    add_common(a)
    add_password_file(a)
    a.add_argument(
        "--format", "-f", choices=("table", "json", "markdown", "nagios"), default="table"
    )
    a.add_argument("--select", action="append", help="only rules with these ID prefixes (PG,QU3)")
    a.add_argument("--ignore", action="append", help="skip rules with these ID prefixes")
    a.add_argument(
        "--log",
        nargs="+",
        metavar="FILE",
        help="also analyse query logs (general: the file or mysql.general_log printed; slow; PostgreSQL; SQL transcript; .gz ok)",
    )
    a.add_argument(
        "--server-version", help="server version for --log without a target, e.g. 8.0.36"
    )
    add_all_databases(a)


def run(args: argparse.Namespace) -> int:
    catalogue, config = load_all(arg_str(args, "config"))
    selection = Selection(prefixes(arg_list(args, "select")), prefixes(arg_list(args, "ignore")))
    check_selection(selection, catalogue)
    logs, targets = arg_list(args, "log"), arg_list(args, "targets")
    if logs:  # only with --log: the log package's regexes are startup cost
        from ..sqlpatterns.logs.sniff import check_log

        for path in logs:
            check_log(path)
    if logs and not targets:
        specs: list[TargetSpec] = []
    else:
        specs = resolve_targets(
            targets,
            config,
            password_file=arg_str(args, "password_file"),
            all_databases=arg_flag(args, "all_databases"),
        )
    result = run_audit(specs, catalogue, config, selection) if specs else AuditResult([])
    if logs:
        version = arg_str(args, "server_version")
        result.extra_findings.extend(audit_logs(logs, version, result, selection))
    fmt = arg_str(args, "format") or "table"
    if fmt == "nagios":  # status line, long text, perfdata (docs/nagios.md)
        from ..nagios import render_nagios  # only for this format: startup cost

        print(render_nagios(result, catalogue, config))
    else:
        print(render(result, fmt))
    for t in result.targets:
        if t.error:
            print(f"dbwatch: {t.spec.name}: {t.error}", file=sys.stderr)
    return result.exit_code


def audit_logs(
    paths: Sequence[str], server_version: str | None, result: AuditResult, selection: Selection
) -> list[Finding]:
    """Analyse the logs (streamed), record their stats in the result, return the findings."""
    started = time.perf_counter()
    print(f"dbwatch: analysing {len(paths)} log file(s)…", file=sys.stderr)
    from ..sqlpatterns.logs import analyse_logs  # only with --log: 0.1 s of regexes

    analysis = analyse_logs(list(paths), server_version)
    seconds = time.perf_counter() - started
    st = analysis.stats
    info = st.to_dict()
    info["seconds"] = round(seconds, 3)
    result.logs.append(info)
    mb = st.bytes / 1e6
    print(
        f"dbwatch: {mb:.1f} MB, {_n(st.lines, 'line')}, {_n(st.statements, 'statement')}, "
        f"{_n(st.transactions, 'transaction')}, {st.unparsable:,} unparsable, "
        + (f"{_n(st.unreadable_lines, 'line')} not understood, " if st.unreadable_lines else "")
        + f"format {st.format}, server {st.server_version or 'unknown'}, "
        f"{mb / seconds if seconds else 0:.1f} MB/s",
        file=sys.stderr,
    )
    for err in st.errors:
        print(f"dbwatch: {err}", file=sys.stderr)
        result.input_errors.append(err)
    return [f for f in analysis.findings if selection.wants(f.rule)]
