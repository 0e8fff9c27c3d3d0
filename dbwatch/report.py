"""Reports: findings as a terminal table, JSON (SPEC §6) or Markdown."""

from __future__ import annotations

import json
import textwrap
from datetime import UTC, datetime
from typing import Any

from .findings import Finding
from .pipeline import AuditResult, TargetResult
from .targets.secrets import scrub, scrub_tree
from .termout import column_width, paint, table, term_width, use_colour, wrap


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def as_json(result: AuditResult) -> str:
    doc: dict[str, Any] = {
        "status": result.status,
        "generated_at": iso(result.generated_at),
        "counts": result.counts(),
        "targets": [t.to_dict() for t in result.targets],
        **({"logs": result.logs} if result.logs else {}),
        "findings": [f.to_dict() for f in result.findings],
    }
    return json.dumps(scrub_tree(doc), indent=2, default=str)  # secrets never leave


def _wrap(text: str, width: int) -> str:
    return "\n".join(wrap(text, width)) or "-"


def _target_line(t: TargetResult) -> str:
    what = f"{t.snapshot.engine} {t.snapshot.server_version}".strip()
    if t.error:
        return f"== {t.spec.name}: unreachable: {t.error}"
    ran = len(t.evaluation.ran)
    state = f"== {t.spec.name} ({what}; {ran} {'rule' if ran == 1 else 'rules'} run"
    if t.evaluation.unknown:
        state += f", {len(t.evaluation.unknown)} unknown: {', '.join(sorted(t.evaluation.unknown))}"
    return state + ")"


def _subject(f: Finding) -> str:
    """The subject, with the session's database when the subject does not name it."""
    db = f.evidence.get("database") if isinstance(f.evidence, dict) else None
    if isinstance(db, str) and db and db not in f.subject:
        return f"{f.subject} db={db}"
    return f.subject


FIX_IN_COLUMN = 3  # a fix longer than this many lines in the column gets its own lines
NARROW = 80  # below this a four-column table cuts too much: one block per finding instead


def _finding_blocks(findings: list[Finding], width: int, colour: bool) -> str:
    out = []
    for f in findings:
        head = f"{paint(f.severity.upper(), f.severity, colour)} {f.rule} "
        out += [
            head + ln if i == 0 else "  " + ln for i, ln in enumerate(wrap(_subject(f), width - 16))
        ]
        out += ["  " + ln for ln in wrap(f.summary, width - 2)]
        out += [
            "  fix: " + ln if i == 0 else "       " + ln
            for i, ln in enumerate(wrap(f.fix, width - 7))
        ]
    return "\n".join(out)


def _finding_rows(findings: list[Finding], width: int, colour: bool) -> str:
    """SEVERITY RULE SUBJECT FINDING sized to `width`; the whole fix, under the row when long."""
    if width < NARROW:
        return _finding_blocks(findings, width, colour)
    sev_w, rule_w = 8, 5
    # one name part wider than the column widens it rather than being cut
    subj_w = column_width([_subject(f) for f in findings], 12, max(16, width // 3), width // 2)
    text_w = width - sev_w - rule_w - subj_w - 6
    if text_w < 30:  # a long subject leaves the finding too little room: blocks fit
        return _finding_blocks(findings, width, colour)
    rows, after = [], []
    for f in findings:
        cell = wrap(f.summary, text_w)
        fix = wrap("fix: " + f.fix, text_w) if f.fix else []
        below: list[str] = []
        if len(fix) <= FIX_IN_COLUMN:
            cell += fix
        elif f.fix:
            below = ["    fix:"] + ["      " + ln for ln in wrap(f.fix, max(30, width - 6))]
        sev = f.severity.upper()
        rows.append(
            [
                [paint(sev, f.severity, colour) + " " * (sev_w - len(sev))],
                [f.rule],
                wrap(_subject(f), subj_w),
                cell,
            ]
        )
        after.append(below)
    return table(
        ["SEVERITY", "RULE", "SUBJECT".ljust(subj_w), "FINDING / FIX"],
        rows,
        [sev_w, rule_w, subj_w, text_w],
        after,
    )


def as_table(result: AuditResult, width: int | None = None, colour: bool | None = None) -> str:
    """Findings grouped by target, sized to the terminal (COLUMNS); colour only on a TTY."""
    width = width or term_width()
    colour = use_colour() if colour is None else colour
    findings = result.findings
    lines: list[str] = []
    names = [t.spec.name for t in result.targets]
    names += sorted({f.target for f in findings} - set(names))
    for t in result.targets:
        lines.append(_wrap(_target_line(t), width))
        lines += [
            "\n".join(
                textwrap.wrap(
                    f"not available: {note}",
                    width,
                    initial_indent="   ",
                    subsequent_indent="     ",
                    break_long_words=False,
                    break_on_hyphens=False,
                )
            )
            for note in t.snapshot.unavailable()
        ]
        mine = [f for f in findings if f.target == t.spec.name]
        lines.append(_finding_rows(mine, width, colour) + "\n" if mine else "   no findings\n")
    for name in names[len(result.targets) :]:
        lines.append(f"== {name}")
        lines.append(_finding_rows([f for f in findings if f.target == name], width, colour) + "\n")
    last = result.status_line()
    status = result.status.upper()
    lines.append(last[: last.rindex(status)] + paint(status, result.status, colour))
    return "\n".join(lines)


def _md(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def as_markdown(result: AuditResult) -> str:
    out = [
        f"# dbwatch audit — {result.status.upper()}",
        "",
        f"Generated {iso(result.generated_at)}.",
        "",
        "| target | engine | version | status |",
        "|---|---|---|---|",
    ]
    for t in result.targets:
        out.append(
            f"| {_md(t.spec.name)} | {t.snapshot.engine} | {_md(t.snapshot.server_version)} "
            f"| {_md(t.error or 'ok')} |"
        )
    out += [
        "",
        "| severity | rule | target | subject | finding | fix |",
        "|---|---|---|---|---|---|",
    ]
    for f in result.findings:
        out.append(
            f"| {f.severity} | {f.rule} | {_md(f.target)} | {_md(f.subject)} | "
            f"{_md(f.summary)} | {_md(f.fix)} |"
        )
    if not result.findings:
        out.append("| | | | | no findings | |")
    return "\n".join(out) + "\n"


def render(result: AuditResult, fmt: str) -> str:
    if fmt == "json":
        return as_json(result)
    # other sessions' query text may quote a password (ALTER USER …): scrubbed like every output
    return scrub((as_markdown if fmt == "markdown" else as_table)(result))
