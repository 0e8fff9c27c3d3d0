"""`dbwatch explain ID`: one rule's full text (what, why, fix, references)."""

from __future__ import annotations

import argparse

from ..catalogue import load_catalogue
from ..errors import UsageError
from ..termout import fill, hanging, term_width, wrap
from .common import arg_str
from .rules import threshold_text, url_lines


def add_arguments(e: argparse.ArgumentParser) -> None:
    e.add_argument("rule_id", metavar="ID")
    e.add_argument("--debug", action="store_true")


def run(args: argparse.Namespace) -> int:
    catalogue = load_catalogue()
    rule_id = arg_str(args, "rule_id") or ""
    rule = catalogue.get(rule_id.upper())
    if rule is None:
        raise UsageError(f"no rule {rule_id!r}; `dbwatch rules` lists them")
    width = term_width()
    out = wrap(f"{rule.id} {rule.name} ({rule.engine}, {rule.category}, {rule.status})", width)
    out += hanging(threshold_text(rule), width, "Severity: ")
    if rule.params:
        params = ", ".join(f"{k} = {v!r}" for k, v in rule.params.items())
        out += hanging(params, width, "Params: ")
    for sec in ("what", "why", "fix"):
        out += ["", sec.upper(), *fill(str(rule.doc[sec]), width)]
    out += ["", "REFERENCES"]
    for ref in rule.references:
        out += url_lines(ref, width)
    print("\n".join(out))
    return 0
