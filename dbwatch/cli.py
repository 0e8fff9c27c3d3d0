"""Command line: the only place that turns exceptions into messages and exit codes."""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__
from .catalogue import Rule, load_catalogue
from .config import Config, TargetConfig, find_config_path, load_config
from .errors import ConfigError, DbwatchError, TargetError, UsageError
from .evaluate import Selection
from .targets import TargetSpec, default_targets, spec_for

log = logging.getLogger("dbwatch")
# Commands that live in their own modules: dbwatch/commands/<name>.py with
# HELP, add_arguments(parser) and run(args) -> int.
EXTENSION_COMMANDS = ("deadlocks", "terminate", "watch", "status")


def _prefixes(values: list[str] | None) -> tuple[str, ...]:
    out: list[str] = []
    for v in values or []:
        out += [p.strip().upper() for p in v.split(",") if p.strip()]
    return tuple(out)


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", help="config file (default: $DBWATCH_CONFIG, ./dbwatch.toml)")
    p.add_argument("--debug", action="store_true", help="log debug messages and show tracebacks")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dbwatch", description=__doc__)
    parser.add_argument("--version", action="version", version=f"dbwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    a = sub.add_parser("audit", help="one pass of every selected rule over every target")
    a.add_argument("targets", nargs="*", metavar="TARGET", help="URL or configured target name")
    add_common(a)
    a.add_argument("--format", "-f", choices=("table", "json", "markdown"), default="table")
    a.add_argument("--select", action="append", help="only rules with these ID prefixes (PG,QU3)")
    a.add_argument("--ignore", action="append", help="skip rules with these ID prefixes")
    a.add_argument("--log", nargs="+", metavar="FILE", help="also analyse query logs (general, "
                   "slow, PostgreSQL, SQL transcript; .gz ok)")
    a.add_argument("--server-version", help="server version for --log without a target, e.g. 8.0.36")
    a.set_defaults(func=cmd_audit)

    r = sub.add_parser("rules", help="list the rule catalogue")
    r.add_argument("--format", "-f", choices=("table", "json", "markdown"), default="table")
    r.add_argument("--debug", action="store_true")
    r.set_defaults(func=cmd_rules)

    e = sub.add_parser("explain", help="one rule's full text")
    e.add_argument("rule_id", metavar="ID")
    e.add_argument("--debug", action="store_true")
    e.set_defaults(func=cmd_explain)

    c = sub.add_parser("config", help="configuration commands")
    csub = c.add_subparsers(dest="config_command", metavar="check")
    csub.required = True
    cc = csub.add_parser("check", help="validate config and rules; print every error")
    add_common(cc)
    cc.set_defaults(func=cmd_config_check)

    for name in EXTENSION_COMMANDS:
        try:
            mod = importlib.import_module(f"dbwatch.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"dbwatch.commands.{name}":
                raise
            continue
        p = sub.add_parser(name, help=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(func=mod.run)
    return parser


def load_all(config_arg: str | None) -> tuple[dict[str, Rule], Config]:
    catalogue = load_catalogue()
    return catalogue, load_config(find_config_path(config_arg), catalogue)


def _with_config(spec: TargetSpec, target: TargetConfig) -> TargetSpec:
    """Per-target settings the probes read (queue retry_after)."""
    return dataclasses.replace(spec, retry_after=target.retry_after)


def resolve_targets(names: Sequence[str], config: Config, say: bool = True) -> list[TargetSpec]:
    """URLs or configured names; else the config's targets; else DBWATCH_TARGETS / local defaults."""
    by_name = {t.name: t for t in config.targets}
    if names:
        return [_with_config(spec_for(by_name[n].url, n), by_name[n]) if n in by_name
                else spec_for(n) for n in names]
    if config.targets:
        return [_with_config(spec_for(t.url, t.name), t) for t in config.targets]
    specs = default_targets()
    if say:
        src = "DBWATCH_TARGETS" if os.environ.get("DBWATCH_TARGETS") else "local defaults"
        print(f"dbwatch: no target given; trying {src}: {', '.join(s.name for s in specs)}",
              file=sys.stderr)
    return specs


def cmd_audit(args: argparse.Namespace) -> int:
    from .audit import AuditResult, run_audit
    from .report import render
    catalogue, config = load_all(args.config)
    selection = Selection(_prefixes(args.select), _prefixes(args.ignore))
    if args.log and not args.targets:
        specs: list[TargetSpec] = []
    else:
        specs = resolve_targets(args.targets, config)
    result = run_audit(specs, catalogue, config, selection) if specs else AuditResult([])
    if args.log:
        from .logaudit import audit_logs
        result.extra_findings.extend(audit_logs(args.log, args.server_version, result, selection))
    print(render(result, args.format))
    for t in result.targets:
        if t.error:
            print(f"dbwatch: {t.spec.name}: {t.error}", file=sys.stderr)
    return result.exit_code


def _threshold_text(rule: Rule) -> str:
    if rule.thresholds is None:
        return rule.severity
    raw = rule.raw_thresholds
    return f"warn {raw.get('warning', '-')} / crit {raw.get('critical', '-')}"


def cmd_rules(args: argparse.Namespace) -> int:
    from tabulate import tabulate
    catalogue = load_catalogue()
    rows = [{"id": r.id, "name": r.name, "engine": r.engine, "category": r.category,
             "status": r.status, "severity": _threshold_text(r), "summary": r.summary}
            for r in sorted(catalogue.values(), key=lambda r: r.id)]
    if args.format == "json":
        print(json.dumps(rows, indent=2))
    elif args.format == "markdown":
        print(rules_markdown(catalogue))
    else:
        print(tabulate([[r["id"], r["name"], r["engine"], r["status"], r["severity"]] for r in rows],
                       headers=["ID", "NAME", "ENGINE", "STATUS", "SEVERITY / THRESHOLDS"]))
    return 0


def rules_markdown(catalogue: dict[str, Rule]) -> str:
    lines = ["| ID | rule | engine | status | severity / thresholds |", "|---|---|---|---|---|"]
    for r in sorted(catalogue.values(), key=lambda r: r.id):
        lines.append(f"| {r.id} | {r.name} | {r.engine} | {r.status} | {_threshold_text(r)} |")
    return "\n".join(lines)


def cmd_explain(args: argparse.Namespace) -> int:
    catalogue = load_catalogue()
    rule = catalogue.get(args.rule_id.upper())
    if rule is None:
        raise UsageError(f"no rule {args.rule_id!r}; `dbwatch rules` lists them")
    print(f"{rule.id} {rule.name} ({rule.engine}, {rule.category}, {rule.status})")
    print(f"Severity: {_threshold_text(rule)}")
    if rule.params:
        print("Params: " + ", ".join(f"{k} = {v!r}" for k, v in rule.params.items()))
    for sec in ("what", "why", "fix"):
        print(f"\n{sec.upper()}\n{str(rule.doc[sec]).strip()}")
    print("\nREFERENCES")
    for ref in rule.doc.get("references", []):
        print(f"  {ref}")
    return 0


def cmd_config_check(args: argparse.Namespace) -> int:
    catalogue, config = load_all(args.config)
    for t in config.targets:
        spec_for(t.url, t.name)   # validates the scheme
    src = config.path or "no config file (defaults)"
    print(f"{src}: OK — {len(config.targets)} targets, {len(config.rules)} rule overrides, "
          f"{len(config.alerts)} alert receivers, {len(catalogue)} rules in the catalogue")
    return 0


def _setup_logging(debug: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING,
                        format="dbwatch: %(levelname)s %(name)s: %(message)s")


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
        print(f"dbwatch: internal error: {type(exc).__name__}: {exc} (rerun with --debug)",
              file=sys.stderr)
        return 3


def _entry() -> Any:
    sys.exit(main())


if __name__ == "__main__":
    _entry()
