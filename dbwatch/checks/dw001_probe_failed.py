"""DW001 probe failed: one finding per failed probe (or per missing grant shared by several
probes), naming the rules it left unknown and what fixes it; evaluate() runs it last."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ..catalogue import Rule
from ..findings import Finding
from ..snapshot import ProbeFailure, Snapshot
from . import CheckContext, check, first_paragraph


def render(template: str, fields: dict[str, object]) -> str:
    """checks.render looked up at call time (a test records the templates it renders)."""
    from . import render as current

    return current(template, fields)


@check("probe_failed")
def probe_failed(ctx: CheckContext) -> Iterator[Finding]:
    yield from findings(ctx.snapshot, ctx.rule, ctx.unknown)


def findings(snap: Snapshot, rule: Rule | None, unknown: Mapping[str, str]) -> list[Finding]:
    """One finding per failed probe — or one per missing grant when several probes were
    refused for the same privilege — naming the rules left unknown and what fixes it."""
    if not snap.failures:  # every finding is a failure's
        return []
    fix_default = first_paragraph(rule.fix) if rule else ""
    template = rule.summary if rule else "{problem}: {error}"
    out = []
    refused: dict[str, list[ProbeFailure]] = {}
    for f in snap.failures:
        if f.privilege and f.grant and f.probe != "connect":
            refused.setdefault(f.grant, []).append(f)
            continue
        affected = _affected(unknown, [f.probe])
        if f.probe == "connect":
            summary = render(template, {"problem": "target unreachable", "error": f.message})
            severity, fix = (
                "critical",
                "Check the URL, network, credentials and that the server is up.",
            )
        else:
            problem = f"probe {f.probe} failed"
            summary = render(template, {"problem": problem, "error": f.message})
            severity, fix = "warning", f.fix or f.grant or fix_default
        out.append(
            _dw001(
                snap, f"probe {f.probe}", summary, severity, fix, [f], affected, identity=f.probe
            )
        )
    for grant, fails in refused.items():
        probes = [f.probe for f in fails]
        affected = _affected(unknown, probes)
        problem = f"probe{'s' if len(probes) > 1 else ''} {', '.join(probes)} refused or partial"
        summary = render(template, {"problem": problem, "error": fails[0].message})
        subject = (
            f"probe {probes[0]}" if len(probes) == 1 else f"privilege for {len(probes)} probes"
        )
        out.append(
            _dw001(
                snap, subject, summary, "warning", grant, fails, affected, identity=["grant", grant]
            )
        )
    return out


def _affected(unknown: Mapping[str, str], probes: list[str]) -> list[str]:
    return sorted(r for r, why in unknown.items() if any(p in why for p in probes))


def _dw001(
    snap: Snapshot,
    subject: str,
    summary: str,
    severity: str,
    fix: str,
    fails: list[ProbeFailure],
    affected: list[str],
    identity: object,
) -> Finding:
    if affected:
        summary += f" (unknown: {', '.join(affected)})"
    return Finding(
        rule="DW001",
        severity=severity,
        target=snap.target,
        subject=subject,
        summary=summary,
        fix=fix,
        evidence={
            "probe": fails[0].probe,
            "probes": [f.probe for f in fails],
            "error": fails[0].message,
            "grant": fails[0].grant,
            "rules_unknown": affected,
        },
        identity=identity,
    )
