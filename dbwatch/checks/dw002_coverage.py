"""DW002 incomplete coverage: everything a probe did not examine (Snapshot.gaps), by name,
one finding per target, the text capped with the count (the evidence has every gap)."""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding
from . import CheckContext, check

TEXT_CAP = 600


@check("incomplete_coverage")
def incomplete_coverage(ctx: CheckContext) -> Iterator[Finding]:
    gaps = ctx.snapshot.gaps
    if not gaps:
        return
    listed = int(ctx.count("max_listed"))
    by_reason: dict[str, list[str]] = {}
    for g in gaps[:listed]:
        by_reason.setdefault(g.reason, []).append(g.name)
    text = "; ".join(f"{', '.join(names)} ({why})" for why, names in by_reason.items())
    if len(text) > TEXT_CAP:
        text = text[: TEXT_CAP - 1].rstrip() + "…"
    more = len(gaps) - min(listed, len(gaps))
    if more:
        text += f"; and {more} more (--format json lists all)"
    kinds = sorted({g.kind for g in gaps})
    summary = ctx.summary(count=len(gaps), kinds=", ".join(kinds), listed=text)
    fixes = list(dict.fromkeys(g.reason for g in gaps if "GRANT" in g.reason))
    yield ctx.finding(
        severity=ctx.rule.severity or "warning",
        subject="coverage",
        summary=summary,
        fix=fixes[0] if len(fixes) == 1 else "",
        evidence={
            "count": len(gaps),
            "kinds": kinds,
            "gaps": [g.__dict__ for g in gaps],
            "names": [g.name for g in gaps],
            "database": ctx.snapshot.scope,
        },
        identity=["coverage", *sorted({g.kind for g in gaps})],
    )
