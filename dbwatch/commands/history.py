"""`dbwatch history`: what fired, what resolved, what was done and which deadlocks happened over
a window (--since 24h), from the daemon's state."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from ..durations import format_duration, parse_duration
from ..errors import UsageError
from ..report import iso
from ..targets.secrets import scrub, scrub_tree
from ..termout import column_width, paint, plural, table, term_width, use_colour, wrap
from .status import add_state_arguments, open_state

HELP = "what fired, resolved and was done, and the deadlocks, over a window (--since 24h)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--since", default="24h", help="the window, e.g. 30m, 24h, 7d (default 24h)")
    p.add_argument("--target", help="only this target")
    p.add_argument("--limit", type=int, default=200, help="at most N rows per section (200)")
    add_state_arguments(p)


def collect(args: argparse.Namespace, now: float) -> dict[str, Any]:
    try:
        window = parse_duration(args.since)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--since: {exc}") from None
    reader, _ = open_state(args)
    try:
        return _collect(reader, args, since_seconds=window, now=now)
    finally:
        reader.close()


def _collect(
    reader: Any, args: argparse.Namespace, since_seconds: float, now: float
) -> dict[str, Any]:
    window = since_seconds
    since = now - window
    limit = max(1, min(args.limit, 10000))
    target = args.target
    fired = reader.fired_since(since, now, limit, target)
    resolved = [
        {
            "rule": r["rule"],
            "severity": r["severity"],
            "target": r["target"],
            "subject": r["subject"],
            "fired_at": iso(r["fired_at"]) if r["fired_at"] else None,
            "resolved_at": iso(r["resolved_at"]),
            "fired_for_seconds": round(r["resolved_at"] - (r["fired_at"] or r["first_seen"]), 1),
            "summary": (r["data"] or {}).get("summary", ""),
        }
        for r in reader.resolved_since(since, limit, target)
    ]
    actions = [
        {
            "at": iso(a["ts"]),
            "target": a["target"],
            "rule": a["rule"],
            "subject": a["subject"],
            "action": a["action"],
            "reason": (a["detail"] or {}).get("reason", "")
            if isinstance(a["detail"], dict)
            else "",
        }
        for a in reader.actions(since, target, limit).rows
    ]
    dls = reader.deadlocks(target, None, None, since, limit)
    deadlocks = []
    for r in dls.rows:
        d = r["data"] if isinstance(r["data"], dict) else {}
        diag = d.get("diagnosis") if isinstance(d.get("diagnosis"), dict) else {}
        tables = sorted(
            {
                f"{lk.get('db')}.{lk.get('table')}"
                for lk in d.get("locks") or []
                if isinstance(lk, dict) and lk.get("table")
            }
        )
        deadlocks.append(
            {
                "at": d.get("at"),
                "recorded": iso(r["seen_at"]),
                "target": r["target"],
                "pattern": (diag or {}).get("pattern", "generic"),
                "tables": tables,
            }
        )
    return {
        "generated_at": iso(now),
        "since": iso(since),
        "window": args.since,
        "fired": [
            {
                "rule": f["rule"],
                "severity": f["severity"],
                "target": f["target"],
                "subject": f["subject"],
                "fired_at": iso(f["fired_at"]),
                "resolved_at": iso(f["resolved_at"]) if f["resolved_at"] else None,
            }
            for f in fired
        ],
        "resolved": resolved,
        "actions": actions,
        "deadlocks": {
            "total": dls.total,
            "by_pattern": reader.deadlock_patterns(target, since),
            "latest": deadlocks,
        },
    }


def as_table(doc: dict[str, Any], width: int, colour: bool) -> str:
    out = [f"History since {doc['since']} (last {doc['window']})"]

    def sev(s: str) -> list[str]:
        return [paint(s.upper(), s, colour) + " " * (8 - len(s))]

    out.append(f"\nFIRED ({len(doc['fired'])})")
    if doc["fired"]:
        sw = column_width([f["subject"] for f in doc["fired"]], 10, max(16, width // 3), width // 2)
        out.append(
            table(
                ["FIRED AT", "SEVERITY", "RULE", "TARGET", "SUBJECT".ljust(sw), "RESOLVED"],
                [
                    [
                        [f["fired_at"]],
                        sev(f["severity"]),
                        [f["rule"]],
                        [f["target"]],
                        wrap(f["subject"], sw),
                        [f["resolved_at"] or "still firing"],
                    ]
                    for f in doc["fired"]
                ],
                [20, 8, 5, 12, sw, 20],
            )
        )
    out.append(f"\nRESOLVED ({len(doc['resolved'])})")
    if doc["resolved"]:
        tw = max(30, width - 20 - 5 - 10 - 8)
        out.append(
            table(
                ["RESOLVED AT", "RULE", "FIRED FOR", "WHAT"],
                [
                    [
                        [r["resolved_at"]],
                        [r["rule"]],
                        [format_duration(r["fired_for_seconds"])],
                        wrap(f"{r['target']}: {r['subject']}: {r['summary']}", tw),
                    ]
                    for r in doc["resolved"]
                ],
                [20, 5, 10, tw],
            )
        )
    out.append(f"\nACTIONS ({len(doc['actions'])})")
    if doc["actions"]:
        tw = max(30, width - 20 - 16 - 5 - 8)
        out.append(
            table(
                ["AT", "ACTION", "RULE", "WHAT"],
                [
                    [
                        [a["at"]],
                        [a["action"]],
                        [a["rule"] or ""],
                        wrap(f"{a['target']}: {a['subject']}: {a['reason']}", tw),
                    ]
                    for a in doc["actions"]
                ],
                [20, 16, 5, tw],
            )
        )
    dl = doc["deadlocks"]
    out.append(f"\nDEADLOCKS ({dl['total']})")
    if dl["total"]:
        for pattern, n in sorted(dl["by_pattern"].items(), key=lambda kv: -kv[1]):
            out.append(f"  {n:>5}  {pattern}")
        out.append("  (each one: dbwatch deadlocks --history, or the dashboard's /deadlocks)")
    out.append(
        f"\n{plural(len(doc['fired']), 'finding')} fired, {len(doc['resolved'])} resolved, "
        f"{plural(len(doc['actions']), 'action')}, {plural(dl['total'], 'deadlock')}."
    )
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    doc = collect(args, time.time())
    if args.format == "json":
        print(json.dumps(scrub_tree(doc), indent=2, default=str))
    else:
        print(scrub(as_table(doc, term_width(), use_colour())))
    return 0
