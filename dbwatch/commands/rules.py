"""`dbwatch rules`: the rule catalogue as a table, JSON or Markdown."""

from __future__ import annotations

import argparse
import json
import re

from ..catalogue import Rule, load_catalogue
from ..termout import table, term_width, wrap
from .common import arg_str


def add_arguments(r: argparse.ArgumentParser) -> None:
    r.add_argument("--format", "-f", choices=("table", "json", "markdown"), default="table")
    r.add_argument("--debug", action="store_true")


def threshold_text(rule: Rule) -> str:
    if rule.thresholds is None:
        return rule.severity
    raw = rule.raw_thresholds
    return f"warn {raw.get('warning', '-')} / crit {raw.get('critical', '-')}"


def run(args: argparse.Namespace) -> int:
    catalogue = load_catalogue()
    rows = [
        {
            "id": r.id,
            "name": r.name,
            "engine": r.engine,
            "category": r.category,
            "status": r.status,
            "severity": threshold_text(r),
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
        print(_table(rows, term_width()))
    return 0


def _table(rows: list[dict[str, str]], width: int) -> str:
    """The catalogue at `width`: ID, ENGINE and STATUS as wide as their longest value; NAME
    as wide as it can be (a long name wraps after a '-'); SEVERITY / THRESHOLDS wrapped."""
    heads = ["ID", "NAME", "ENGINE", "STATUS", "SEVERITY / THRESHOLDS"]
    keys = ["id", "name", "engine", "status", "severity"]
    w = {k: max(len(h), *(len(r[k]) for r in rows)) for h, k in zip(heads, keys)}
    gaps = 2 * (len(keys) - 1)
    sev = max(12, width - gaps - w["id"] - w["name"] - w["engine"] - w["status"])
    sev = min(sev, w["severity"])
    name = max(12, min(w["name"], width - gaps - w["id"] - w["engine"] - w["status"] - sev))
    cells = [
        [[r["id"]], _parts(r["name"], name), [r["engine"]], [r["status"]], wrap(r["severity"], sev)]
        for r in rows
    ]
    if sev < len(heads[-1]):
        heads[-1] = "THRESHOLDS"
    return table(heads, cells, [w["id"], name, w["engine"], w["status"], sev])


def url_lines(url: str, width: int) -> list[str]:
    """A reference URL indented, broken (if it must be) only after / - _ . # ? or &."""
    lines = ["  "]
    for part in re.findall(r"[^-/_.#?&]+[-/_.#?&]?|[-/_.#?&]", url):
        if lines[-1].strip() and len(lines[-1]) + len(part) > width:
            lines.append("    ")
        lines[-1] += part
    return lines


def _parts(name: str, width: int) -> list[str]:
    """A rule name in lines of at most `width`, broken only after a '-'."""
    lines = [""]
    for part in re.findall(r"[^-]+-?", name):
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
    return lines


def rules_markdown(catalogue: dict[str, Rule]) -> str:
    lines = ["| ID | rule | engine | status | severity / thresholds |", "|---|---|---|---|---|"]
    for r in sorted(catalogue.values(), key=lambda r: r.id):
        lines.append(f"| {r.id} | {r.name} | {r.engine} | {r.status} | {threshold_text(r)} |")
    return "\n".join(lines)
