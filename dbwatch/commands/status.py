"""`dbwatch status`: what fires now and the last cycle of each target, from the daemon's state."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from tabulate import tabulate

from ..daemon.fleet import holders
from ..daemon.state import State, default_state_path
from ..daemon.statedb import is_pg_url
from ..durations import format_duration
from ..errors import UsageError
from ..inputs import check_state_path
from ..report import iso

HELP = "show what the daemon has firing now and the last cycle of each target"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--state", help="state database (default: $XDG_STATE_HOME/dbwatch/state.db)")
    p.add_argument("--format", "-f", choices=("table", "json"), default="table")
    p.add_argument("--debug", action="store_true")


def collect(state: State, now: float) -> dict[str, Any]:
    def finding(r: Any) -> dict[str, Any]:
        since = r.fired_at or r.first_seen
        return {
            "rule": r.rule,
            "severity": r.severity,
            "target": r.target,
            "subject": r.subject,
            "status": r.status,
            "since": iso(since),
            "for_seconds": round(now - since, 1),
            "summary": r.data.get("summary", ""),
            "fingerprint": r.fingerprint,
        }

    held = holders(state) if state.dialect == "postgresql" else {}
    cycles = [
        {
            "target": c["target"],
            "daemon": (held.get(c["target"]) or {}).get("holder"),
            "started": iso(c["started"]),
            "age_seconds": round(now - c["started"], 1),
            "duration": c["duration"],
            "status": c["status"],
            "error": c["error"],
            "findings": c["findings"],
            "lateness": c["lateness"],
        }
        for c in state.cycles()
    ]
    return {
        "generated_at": iso(now),
        "state": state.path,
        "firing": [finding(r) for r in state.firing()],
        "pending": [finding(r) for r in state.pending()],
        "targets": cycles,
        "outbox": state.outbox_size(),
    }


def as_table(doc: dict[str, Any]) -> str:
    lines = []
    fleet = any(c.get("daemon") for c in doc["targets"])
    rows = [
        [
            c["target"],
            c["status"],
            f"{format_duration(c['age_seconds'])} ago",
            f"{(c['duration'] or 0):.2f}s",
            c["findings"],
            (c["error"] or "")[:60],
        ]
        + ([c.get("daemon") or "-"] if fleet else [])
        for c in doc["targets"]
    ]
    head = ["TARGET", "LAST CYCLE", "WHEN", "TOOK", "FINDINGS", "ERROR"]
    lines.append(
        tabulate(rows, headers=head + (["DAEMON (lease)"] if fleet else []))
        if rows
        else "No cycle recorded yet."
    )
    for key, title in (("firing", "FIRING"), ("pending", "PENDING")):
        items = doc[key]
        if not items:
            continue
        lines.append(f"\n{title} ({len(items)})")
        lines.append(
            tabulate(
                [
                    [
                        f["severity"].upper(),
                        f["rule"],
                        f["target"],
                        f["subject"],
                        format_duration(f["for_seconds"]),
                        f["summary"][:70],
                    ]
                    for f in items
                ],
                headers=["SEVERITY", "RULE", "TARGET", "SUBJECT", "FOR", "SUMMARY"],
            )
        )
    if not doc["firing"]:
        lines.append("\nNothing firing.")
    queued = sum(doc["outbox"].values())
    if queued:
        lines.append(
            f"\n{queued} alert messages waiting for delivery: "
            + ", ".join(f"{k} {v}" for k, v in sorted(doc["outbox"].items()))
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.state and is_pg_url(args.state):
        return _print(State(args.state), args.format)
    path = Path(args.state).expanduser() if args.state else default_state_path()
    if not path.exists():
        raise UsageError(f"{path}: no state database (has `dbwatch watch` run with this --state?)")
    return _print(State(check_state_path(path, must_exist=True)), args.format)


def _print(state: State, fmt: str) -> int:
    try:
        doc = collect(state, time.time())
    finally:
        state.close()
    print(json.dumps(doc, indent=2, default=str) if fmt == "json" else as_table(doc))
    return 0
