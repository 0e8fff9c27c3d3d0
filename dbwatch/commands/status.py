"""`dbwatch status`: what fires now and each target's last cycle, from the daemon's state.

Finds the state like the daemon does (--state, else [daemon] state of --config, else the
default path), flags targets whose last cycle is stale (daemon dead or stuck), sorts by
severity and exits with the Nagios code of what fires.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import NotRequired, TypeAlias, TypedDict

from ..catalogue import load_catalogue
from ..config import Config, find_config_path, load_config
from ..daemon.state import FindingRow, State, default_state_path
from ..daemon.statedb import is_pg_url
from ..deadlocks.unshown import NOT_SHOWN_KEY
from ..durations import format_duration, plural
from ..errors import UsageError
from ..findings import nagios_status
from ..inputs import check_state_path
from ..report import iso
from ..snapshot.values import JSON, JSONObject, opt_float, to_float, to_int, to_str
from ..statereader import Page, StateReader
from ..targets.secrets import redact, scrub, scrub_tree
from ..termout import column_width, fit_table, paint, table, term_width, use_colour, wrap
from ..web.view import cycle_status, stale_after

DEFAULT_INTERVAL = 60.0
_SEVERITY_ORDER = {"critical": 0, "unknown": 1, "warning": 2}


def add_state_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", "-c", help="config file: its [daemon] state and target intervals")
    p.add_argument(
        "--state",
        help="state database (default: from --config, else $XDG_STATE_HOME/dbwatch/state.db)",
    )
    p.add_argument("--format", "-f", choices=("table", "json"), default="table")
    p.add_argument("--debug", action="store_true", help="show tracebacks")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_state_arguments(p)


class FleetState:
    """The reads `status` needs, from a PostgreSQL state (`[state] url`) through State."""

    def __init__(self, url: str, schema: str) -> None:
        self.state = State(url, schema=schema)
        self.path = self.state.path  # the URL without its password

    def cycles(self) -> list[JSONObject]:
        return self.state.cycles()

    def findings(self, status: str = "firing", limit: int = 10000) -> Page:
        rows = [_firing_row(r) for r in self.state.firing()][:limit]
        return Page(rows, len(rows), 0, limit)

    def outbox_size(self) -> dict[str, int]:
        return self.state.outbox_size()

    def dropped(self) -> list[JSONObject]:
        return self.state.dropped()

    def series_last(self, key: str) -> dict[str, tuple[float, float]]:
        return self.state.series_last(key)

    def leases(self) -> dict[str, JSON]:
        from ..daemon.fleet import holders

        return {k: v.get("holder") for k, v in holders(self.state).items()}


def _firing_row(r: FindingRow) -> JSONObject:
    return {
        "fingerprint": r.fingerprint,
        "target": r.target,
        "rule": r.rule,
        "severity": r.severity,
        "subject": r.subject,
        "fired_at": r.fired_at,
        "first_seen": r.first_seen,
        "data": r.data,
    }


Reader: TypeAlias = "StateReader | FleetState"


def open_reader(args: argparse.Namespace) -> tuple[StateReader, Config]:
    """The reader of the state the daemon with this config writes; a clear error if none."""
    reader, config = open_state(args)
    assert isinstance(reader, StateReader)  # fleet_ok=False: never a FleetState
    return reader, config


def open_state(args: argparse.Namespace, fleet_ok: bool = False) -> tuple[Reader, Config]:
    """The reader of the state the daemon with this config writes; a clear error if none."""
    path = find_config_path(args.config)
    config = load_config(path, load_catalogue()) if path is not None else Config()
    url = args.state if args.state and is_pg_url(args.state) else None
    if url is None and not args.state and config.state.url:
        url = config.state.url
    if url is not None:
        if fleet_ok:
            return FleetState(url, config.state.schema), config
        return StateReader.over(State(url, schema=config.state.schema)), config
    raw = args.state or config.daemon.state
    state = Path(raw).expanduser() if raw else default_state_path()
    if state.exists():
        state = check_state_path(state, must_exist=True)
    try:
        return StateReader(state), config
    except FileNotFoundError:
        where = f"[daemon] state of {path}" if (not args.state and config.daemon.state) else ""
        raise UsageError(
            f"{state}: no state database{' (' + where + ')' if where else ''}: has `dbwatch "
            "watch` run with this config? (--state F names another one)"
        ) from None


class TargetLine(TypedDict):
    target: str
    status: str
    started: str | None
    age_seconds: float | None
    stale_after_seconds: float
    duration: float | None
    error: str | None
    findings: int | None
    daemon: NotRequired[JSON]
    # deadlocks the server counted that the daemon did not record (no log_file)
    deadlocks_not_shown: NotRequired[int]


class FiringLine(TypedDict):
    rule: str
    severity: str
    target: str
    subject: str
    since: str
    for_seconds: float
    summary: str
    fix: str
    fingerprint: str


class StatusDoc(TypedDict):
    generated_at: str
    state: str
    targets: list[TargetLine]
    firing: list[FiringLine]
    outbox: dict[str, int]
    alerts_dropped: list[JSONObject]
    status: NotRequired[str]
    exit_code: NotRequired[int]


def _target_line(c: JSONObject, interval: float, now: float, daemon: JSON | None) -> TargetLine:
    started = to_float(c["started"])
    line = TargetLine(
        target=to_str(c["target"]),
        status=cycle_status(c, interval, now),
        started=iso(started),
        age_seconds=round(now - started, 1),
        stale_after_seconds=stale_after(interval),
        duration=opt_float(c["duration"]),
        error=redact(to_str(c["error"])) if c["error"] else None,
        findings=None if c["findings"] is None else to_int(c["findings"]),
    )
    if daemon is not None:
        line["daemon"] = daemon
    return line


def _firing_line(r: JSONObject, now: float) -> FiringLine:
    since = to_float(r["fired_at"] or r["first_seen"])
    data = r["data"] if isinstance(r["data"], dict) else {}
    return FiringLine(
        rule=to_str(r["rule"]),
        severity=to_str(r["severity"]),
        target=to_str(r["target"]),
        subject=to_str(r["subject"]),
        since=iso(since),
        for_seconds=round(now - since, 1),
        summary=to_str(data.get("summary")),
        fix=to_str(data.get("fix")),
        fingerprint=to_str(r["fingerprint"]),
    )


def collect(reader: Reader, config: Config, now: float) -> StatusDoc:
    intervals = {t.name: t.interval for t in config.targets}
    leases = reader.leases() if isinstance(reader, FleetState) else {}
    targets: list[TargetLine] = []
    seen = set()
    for c in reader.cycles():
        name = to_str(c["target"])
        seen.add(name)
        interval = intervals.get(name, DEFAULT_INTERVAL)
        targets.append(_target_line(c, interval, now, leases.get(name) if leases else None))
    unshown = reader.series_last(NOT_SHOWN_KEY)
    for line in targets:
        if line["target"] in unshown:
            line["deadlocks_not_shown"] = int(unshown[line["target"]][1])
    for name in sorted(set(intervals) - seen):
        targets.append(
            TargetLine(
                target=name,
                status="no cycle yet",
                started=None,
                age_seconds=None,
                stale_after_seconds=stale_after(intervals[name]),
                duration=None,
                error=None,
                findings=None,
            )
        )
    firing = [_firing_line(r, now) for r in reader.findings("firing", limit=10000).rows]
    firing.sort(key=lambda f: (_SEVERITY_ORDER.get(f["severity"], 3), -f["for_seconds"]))
    doc = StatusDoc(
        generated_at=iso(now),
        state=str(reader.path),
        targets=targets,
        firing=firing,
        outbox=reader.outbox_size(),
        alerts_dropped=reader.dropped(),  # receivers removed from the config
    )
    doc["status"], doc["exit_code"] = verdict(doc)
    return doc


def verdict(doc: StatusDoc) -> tuple[str, int]:
    """The verdict `audit` and `watch --once` give (findings.nagios_status): a critical finding
    2; else anything unknown — a firing DW001 (a target unreachable or unreadable: not counted
    as critical, as in `audit`), a stale daemon, a target without a good cycle — 3; else
    warning 1; else 0."""
    sev = [f["severity"] for f in doc["firing"] if f["rule"] != "DW001"]
    unknown = sum(1 for f in doc["firing"] if f["rule"] == "DW001" or f["severity"] == "unknown")
    blind = not doc["targets"] or any(t["status"] not in ("ok", "degraded") for t in doc["targets"])
    return nagios_status(sev.count("critical"), unknown + blind, sev.count("warning"))


def as_table(doc: StatusDoc, width: int, colour: bool) -> str:
    lines = []
    if doc["targets"]:
        rows = []
        for c in doc["targets"]:
            age = (
                "never" if c["age_seconds"] is None else f"{format_duration(c['age_seconds'])} ago"
            )
            st = c["status"]
            tint = {"stale": "stale", "ok": "ok", "degraded": "warning"}.get(st, "critical")
            took = f"{(c['duration'] or 0):.2f}s"
            rows.append([c["target"], paint(st, tint, colour), age, took, c["error"] or ""])
        heads = ["TARGET", "LAST CYCLE", "WHEN", "TOOK", "ERROR"]
        lines.append(fit_table(heads, rows, width))
        stale = [c for c in doc["targets"] if c["status"] == "stale"]
        if stale:
            text = (
                f"STALE: no cycle of {', '.join(c['target'] for c in stale)} for more than three "
                "intervals: the daemon is stopped or stuck; what follows is old."
            )
            lines.append(
                "\n"
                + "\n".join(wrap(text, width)).replace("STALE", paint("STALE", "stale", colour), 1)
            )
    else:
        lines.append("No cycle recorded yet: the daemon has not finished a probe cycle.")
    for c in doc["targets"]:
        if c.get("deadlocks_not_shown"):
            n = c.get("deadlocks_not_shown", 0)
            text = (
                f"{c['target']}: {plural(n, 'deadlock')} the server counted and the daemon did "
                "not show (no log_file): give the target `log_file` to read every one"
            )
            lines.append("\n" + "\n".join(wrap(text, width)))
    firing = doc["firing"]
    if firing:
        lines.append(f"\nFIRING ({len(firing)})")
        tw = max(len(f["target"]) for f in firing)
        tw = min(max(tw, 6), 24)
        sw = column_width([f["subject"] for f in firing], 10, max(16, width // 4), width // 3)
        text_w = width - 8 - 5 - tw - sw - 8 - 10
        if text_w < 36:  # too narrow for six columns: one block per finding
            lines.append(_blocks(firing, width, colour))
        else:
            lines.append(_firing_table(firing, tw, sw, text_w, colour))
    else:
        lines.append("\nNothing firing.")
    return _footer(doc, lines, width, colour)


def _blocks(firing: list[FiringLine], width: int, colour: bool) -> str:
    out = []
    for f in firing:
        sev = f["severity"].upper()
        head = wrap(
            f"{sev} {f['rule']} {f['target']}: {f['subject']} "
            f"(for {format_duration(f['for_seconds'])})",
            width,
        )
        head[0] = head[0].replace(sev, paint(sev, f["severity"], colour), 1)
        out += [head[0]] + ["  " + ln for ln in head[1:]]
        out += ["  " + ln for ln in wrap(f["summary"], width - 2)]
    return "\n".join(out)


def _firing_table(firing: list[FiringLine], tw: int, sw: int, text_w: int, colour: bool) -> str:
    rows = [
        [
            [paint(f["severity"].upper(), f["severity"], colour) + " " * (8 - len(f["severity"]))],
            [f["rule"]],
            wrap(f["target"], tw),
            wrap(f["subject"], sw),
            [format_duration(f["for_seconds"])],
            wrap(f["summary"], text_w),
        ]
        for f in firing
    ]
    return table(
        ["SEVERITY", "RULE", "TARGET".ljust(tw), "SUBJECT".ljust(sw), "FOR", "SUMMARY"],
        rows,
        [8, 5, tw, sw, 8, text_w],
    )


def _footer(doc: StatusDoc, lines: list[str], width: int, colour: bool) -> str:
    firing = doc["firing"]
    queued = sum(doc["outbox"].values())
    if queued:
        lines.append(
            f"\n{plural(queued, 'alert message')} waiting for delivery: "
            + ", ".join(f"{k} {v}" for k, v in sorted(doc["outbox"].items()))
        )
    for d in doc.get("alerts_dropped") or []:
        lines.append(
            f"\n{d['messages']} alert messages for receiver {d['receiver']!r} were dropped "
            f"(removed from the config) at {iso(to_float(d['ts']))}"
        )
    status = paint(doc["status"].upper(), doc["status"], colour)
    counts = {
        s: sum(1 for f in firing if f["severity"] == s) for s in ("critical", "unknown", "warning")
    }
    parts = [plural(n, s, s) for s, n in counts.items() if n]
    last = (
        f"Status: {doc['status'].upper()} — {plural(len(firing), 'finding')} firing"
        + (f" ({', '.join(parts)})" if parts else "")
        + ("; the fixes: --format json or the dashboard" if firing else "")
    )
    lines.append("\n" + "\n".join(wrap(last, width)).replace(doc["status"].upper(), status, 1))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    reader, config = open_state(args, fleet_ok=True)
    try:
        doc = collect(reader, config, time.time())
    finally:
        if isinstance(reader, FleetState):
            reader.state.close()
    if args.format == "json":
        print(json.dumps(scrub_tree(doc), indent=2, default=str))
    else:
        print(scrub(as_table(doc, term_width(), use_colour())))
    return int(doc["exit_code"])
