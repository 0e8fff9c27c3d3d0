"""`dbwatch rules` and `dbwatch explain`: the catalogue and one rule's full text."""

from __future__ import annotations

import argparse
import json

from ..catalogue import Rule, load_catalogue
from ..errors import UsageError
from .common import arg_str

HELP = "list the rule catalogue"


def add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--format", "-f", choices=("table", "json", "markdown"), default="table")
    r.add_argument("--debug", action="store_true")


def add_explain_arguments(e: argparse.ArgumentParser) -> None:
    e.add_argument("rule_id", metavar="ID")
    e.add_argument("--debug", action="store_true")


def _threshold_text(rule: Rule) -> str:
    if rule.thresholds is None:
        return rule.severity
    raw = rule.raw_thresholds
    return f"warn {raw.get('warning', '-')} / crit {raw.get('critical', '-')}"


def run(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    catalogue = load_catalogue()
    rows = [
        {
            "id": r.id,
            "name": r.name,
            "engine": r.engine,
            "category": r.category,
            "status": r.status,
            "severity": _threshold_text(r),
            "summary": r.summary,
        }
        for r in sorted(catalogue.values(), key=lambda r: r.id)
    ]
    fmt = arg_str(args, "format")
    if fmt == "json":
        print(json.dumps(rows, indent=2))
    elif fmt == "markdown":
        print(rules_markdown(catalogue))
    else:
        print(
            tabulate(
                [[r["id"], r["name"], r["engine"], r["status"], r["severity"]] for r in rows],
                headers=["ID", "NAME", "ENGINE", "STATUS", "SEVERITY / THRESHOLDS"],
            )
        )
    return 0


def rules_markdown(catalogue: dict[str, Rule]) -> str:
    lines = ["| ID | rule | engine | status | severity / thresholds |", "|---|---|---|---|---|"]
    for r in sorted(catalogue.values(), key=lambda r: r.id):
        lines.append(f"| {r.id} | {r.name} | {r.engine} | {r.status} | {_threshold_text(r)} |")
    return "\n".join(lines)


def run_explain(args: argparse.Namespace) -> int:
    catalogue = load_catalogue()
    rule_id = arg_str(args, "rule_id") or ""
    rule = catalogue.get(rule_id.upper())
    if rule is None:
        raise UsageError(f"no rule {rule_id!r}; `dbwatch rules` lists them")
    print(f"{rule.id} {rule.name} ({rule.engine}, {rule.category}, {rule.status})")
    print(f"Severity: {_threshold_text(rule)}")
    if rule.params:
        print("Params: " + ", ".join(f"{k} = {v!r}" for k, v in rule.params.items()))
    for sec in ("what", "why", "fix"):
        print(f"\n{sec.upper()}\n{str(rule.doc[sec]).strip()}")
    print("\nREFERENCES")
    for ref in rule.references:
        print(f"  {ref}")
    return 0
