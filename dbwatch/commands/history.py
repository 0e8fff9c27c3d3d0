"""`dbwatch history`: what fired, what resolved, what was done and which deadlocks happened over
a window (--since 24h), from the daemon's state."""

from __future__ import annotations

import argparse
import json
import time
from typing import TypedDict

from ..durations import format_duration, parse_duration, plural
from ..errors import UsageError
from ..records import ActionRecord, DeadlockRecord, json_object
from ..report import iso
from ..snapshot.values import JSON, JSONObject, opt_float, opt_str, to_float, to_str
from ..statereader import StateReader
from ..targets.secrets import scrub, scrub_tree
from ..termout import fit_table, hanging, paint, term_width, use_colour
from .status import add_state_arguments, open_reader


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--since", default="24h", help="the window, e.g. 30m, 24h, 7d (default 24h)")
    p.add_argument("--target", help="only this target")
    p.add_argument("--limit", type=int, default=200, help="at most N rows per section (200)")
    add_state_arguments(p)


class FiredLine(TypedDict):
    rule: str
    severity: str
    target: str
    subject: str
    fired_at: str
    resolved_at: str | None


class ResolvedLine(TypedDict):
    rule: str
    severity: str
    target: str
    subject: str
    fired_at: str | None
    resolved_at: str
    fired_for_seconds: float
    summary: str


class ActionLine(TypedDict):
    at: str
    target: str
    rule: str | None
    subject: str
    action: str
    reason: str


class DeadlockLine(TypedDict):
    at: JSON
    recorded: str
    target: str
    pattern: JSON
    tables: list[str]


class Deadlocks(TypedDict):
    total: int
    by_pattern: dict[str, int]
    latest: list[DeadlockLine]


class HistoryDoc(TypedDict):
    generated_at: str
    since: str
    window: str
    fired: list[FiredLine]
    resolved: list[ResolvedLine]
    actions: list[ActionLine]
    deadlocks: Deadlocks


def collect(args: argparse.Namespace, now: float) -> HistoryDoc:
    try:
        window = parse_duration(args.since)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"--since: {exc}") from None
    reader, _ = open_reader(args)
    try:
        return _collect(reader, args, since_seconds=window, now=now)
    finally:
        reader.close()


def _resolved(r: JSONObject) -> ResolvedLine:
    resolved_at = to_float(r["resolved_at"])
    fired_at = opt_float(r["fired_at"])
    return ResolvedLine(
        rule=to_str(r["rule"]),
        severity=to_str(r["severity"]),
        target=to_str(r["target"]),
        subject=to_str(r["subject"]),
        fired_at=iso(fired_at) if fired_at else None,
        resolved_at=iso(resolved_at),
        fired_for_seconds=round(resolved_at - (fired_at or to_float(r["first_seen"])), 1),
        summary=to_str(json_object(r["data"]).get("summary")),
    )


def _action(a: JSONObject) -> ActionLine:
    return ActionLine(
        at=iso(to_float(a["ts"])),
        target=to_str(a["target"]),
        rule=opt_str(a["rule"]),
        subject=to_str(a["subject"]),
        action=to_str(a["action"]),
        reason=ActionRecord.from_json(a["detail"]).reason,
    )


def _deadlock(r: JSONObject) -> DeadlockLine:
    d = DeadlockRecord.from_json(r["data"])
    return DeadlockLine(
        at=d.at,
        recorded=iso(to_float(r["seen_at"])),
        target=to_str(r["target"]),
        pattern=d.diagnosis.pattern,
        tables=sorted({f"{lk.db}.{lk.table}" for lk in d.locks if lk.table}),
    )


def _fired(f: JSONObject) -> FiredLine:
    resolved_at = opt_float(f["resolved_at"])
    return FiredLine(
        rule=to_str(f["rule"]),
        severity=to_str(f["severity"]),
        target=to_str(f["target"]),
        subject=to_str(f["subject"]),
        fired_at=iso(to_float(f["fired_at"])),
        resolved_at=iso(resolved_at) if resolved_at else None,
    )


def _collect(
    reader: StateReader, args: argparse.Namespace, since_seconds: float, now: float
) -> HistoryDoc:
    since = now - since_seconds
    limit = max(1, min(args.limit, 10000))
    target: str | None = args.target
    dls = reader.deadlocks(target, None, None, since, limit)
    return HistoryDoc(
        generated_at=iso(now),
        since=iso(since),
        window=str(args.since),
        fired=[_fired(f) for f in reader.fired_since(since, now, limit, target)],
        resolved=[_resolved(r) for r in reader.resolved_since(since, limit, target)],
        actions=[_action(a) for a in reader.actions(since, target, limit).rows],
        deadlocks=Deadlocks(
            total=dls.total,
            by_pattern=reader.deadlock_patterns(target, since),
            latest=[_deadlock(r) for r in dls.rows],
        ),
    )


def as_table(doc: HistoryDoc, width: int, colour: bool) -> str:
    out = [f"History since {doc['since']} (last {doc['window']})"]

    def sev(s: str) -> str:
        return paint(s.upper(), s, colour)

    out.append(f"\nFIRED ({len(doc['fired'])})")
    if doc["fired"]:
        heads = ["FIRED AT", "SEVERITY", "RULE", "TARGET", "SUBJECT", "RESOLVED"]
        rows = [
            [
                f["fired_at"],
                sev(f["severity"]),
                f["rule"],
                f["target"],
                f["subject"],
                f["resolved_at"] or "still firing",
            ]
            for f in doc["fired"]
        ]
        out.append(fit_table(heads, rows, width))
    out.append(f"\nRESOLVED ({len(doc['resolved'])})")
    if doc["resolved"]:
        rows = [
            [
                r["resolved_at"],
                r["rule"],
                format_duration(r["fired_for_seconds"]),
                f"{r['target']}: {r['subject']}: {r['summary']}",
            ]
            for r in doc["resolved"]
        ]
        out.append(fit_table(["RESOLVED AT", "RULE", "FIRED FOR", "WHAT"], rows, width))
    out.append(f"\nACTIONS ({len(doc['actions'])})")
    if doc["actions"]:
        rows = [
            [
                a["at"],
                a["action"],
                a["rule"] or "",
                f"{a['target']}: {a['subject']}: {a['reason']}",
            ]
            for a in doc["actions"]
        ]
        out.append(fit_table(["AT", "ACTION", "RULE", "WHAT"], rows, width))
    dl = doc["deadlocks"]
    out.append(f"\nDEADLOCKS ({dl['total']})")
    if dl["total"]:
        for pattern, n in sorted(dl["by_pattern"].items(), key=lambda kv: -kv[1]):
            out.append(f"  {n:>5}  {pattern}")
        note = "(each one: dbwatch deadlocks --history, or the dashboard's /deadlocks)"
        out += hanging(note, width, "  ", "   ")
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
