"""Reports: findings as a terminal table, JSON (SPEC §6) or Markdown."""

from __future__ import annotations

import json
import textwrap
from datetime import UTC, datetime
from typing import Any

from tabulate import tabulate

from .findings import Finding
from .pipeline import AuditResult, TargetResult
from .targets.secrets import scrub, scrub_tree

WIDTH = 100


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
    return (
        "\n".join(textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False)) or "-"
    )


def _cut(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _target_line(t: TargetResult) -> str:
    what = f"{t.snapshot.engine} {t.snapshot.server_version}".strip()
    if t.error:
        return f"== {t.spec.name}: unreachable: {t.error}"
    state = f"== {t.spec.name} ({what}; {len(t.evaluation.ran)} rules run"
    if t.evaluation.unknown:
        state += f", {len(t.evaluation.unknown)} unknown: {', '.join(sorted(t.evaluation.unknown))}"
    return state + ")"


def _subject(f: Finding) -> str:
    """The subject, with the session's database when the subject does not name it."""
    db = f.evidence.get("database") if isinstance(f.evidence, dict) else None
    if isinstance(db, str) and db and db not in f.subject:
        return f"{f.subject} db={db}"
    return f.subject


def _finding_rows(findings: list[Finding]) -> str:
    rows = []
    for f in findings:
        text = _wrap(_cut(f.summary, 300), 54) + "\n" + _wrap("fix: " + _cut(f.fix, 220), 54)
        if len(f.fix) > 220:
            text += f"\n(full fix: --format json; dbwatch explain {f.rule})"
        rows.append([f.severity.upper(), f.rule, _wrap(_subject(f), 24), text])
    return str(
        tabulate(rows, headers=["SEVERITY", "RULE", "SUBJECT", "FINDING / FIX"], tablefmt="simple")
    )


def as_table(result: AuditResult) -> str:
    """Findings grouped by target, in 100 columns."""
    findings = result.findings
    lines: list[str] = []
    names = [t.spec.name for t in result.targets]
    names += sorted({f.target for f in findings} - set(names))
    for t in result.targets:
        lines.append(_wrap(_target_line(t), WIDTH))
        lines += [
            "\n".join(
                textwrap.wrap(
                    f"not available: {note}", WIDTH, initial_indent="   ", subsequent_indent="     "
                )
            )
            for note in t.snapshot.unavailable()
        ]
        mine = [f for f in findings if f.target == t.spec.name]
        lines.append(_finding_rows(mine) + "\n" if mine else "   no findings\n")
    for name in names[len(result.targets) :]:
        lines.append(f"== {name}")
        lines.append(_finding_rows([f for f in findings if f.target == name]) + "\n")
    lines.append(result.status_line())
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
