"""`--format nagios`: a monitoring plugin's output (status line, findings as long text) with
performance data in the monitoring-plugins guidelines' syntax, thresholds from the rules' own.

Labels are `<target>/<figure>` (docs/nagios.md lists them, their units and sources).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from .catalogue import Param, Rule, Thresholds
from .config import Config
from .durations import parse_count
from .figures import gauges, server_deadlocks
from .findings import Finding
from .frozen import frozen
from .pipeline import AuditResult, TargetResult
from .targets.secrets import scrub

LONG_TEXT_MAX = 400  # one finding's line: Nagios keeps 8 KiB of plugin output by default


@frozen
class Perf:
    """One `'label'=value[UOM];[warn];[crit];[min];[max]` item."""

    label: str
    value: float
    uom: str = ""
    warn: float | None = None
    crit: float | None = None
    min: float | None = 0.0
    max: float | None = None

    def render(self) -> str:
        fields = [_num(self.value) + self.uom, *(_opt(v) for v in (self.warn, self.crit))]
        fields += [_opt(self.min), _opt(self.max)]
        while fields and fields[-1] == "":  # trailing unfilled semicolons can be dropped
            fields.pop()
        return quote(self.label) + "=" + ";".join(fields)


def quote(label: str) -> str:
    """Always single-quoted (Icinga's advice); a quote inside is doubled."""
    return "'" + label.replace("'", "''") + "'"


def _num(v: float) -> str:
    """The guidelines' class [-0-9.]: no exponent, no inf/nan."""
    if not math.isfinite(v):
        raise ValueError(f"perfdata value {v!r}")
    if v == int(v):
        return str(int(v))
    return f"{v:.3f}".rstrip("0").rstrip(".")


def _opt(v: float | None) -> str:
    return "" if v is None else _num(v)


@frozen
class Limits:
    """A rule's effective thresholds and params (its TOML, then the config's override)."""

    thresholds: Thresholds | None
    params: dict[str, Param]

    @classmethod
    def of(cls, catalogue: dict[str, Rule], config: Config, rule_id: str) -> Limits:
        rule = catalogue.get(rule_id)
        if rule is None:
            return cls(None, {})
        params = dict(rule.params)
        thresholds = rule.thresholds
        override = config.rules.get(rule_id)
        if override is not None:
            params.update(override.params)
            thresholds = override.thresholds or thresholds
        return cls(thresholds, params)

    def levels(self) -> tuple[float | None, float | None]:
        t = self.thresholds
        return (t.warning, t.critical) if t is not None else (None, None)

    def param_levels(self, warning: str, critical: str) -> tuple[float | None, float | None]:
        return self._count(warning), self._count(critical)

    def _count(self, name: str) -> float | None:
        raw = self.params.get(name)
        if raw is None or isinstance(raw, (bool, list)):
            return None
        try:
            return float(parse_count(raw))
        except (TypeError, ValueError):
            return None


def _severity_counts(findings: Iterable[Finding]) -> tuple[int, int]:
    found = list(findings)
    return (
        sum(1 for f in found if f.severity == "critical"),
        sum(1 for f in found if f.severity == "warning"),
    )


def target_perfdata(t: TargetResult, catalogue: dict[str, Rule], config: Config) -> list[Perf]:
    """The figures of one target that were measured; one not read is left out (its DW001 says
    why), never printed as 0."""
    name = t.spec.name
    findings = t.evaluation.findings
    crit, warn = _severity_counts(findings)
    out = [
        Perf(f"{name}/findings_critical", crit, crit=0.0),
        Perf(f"{name}/findings_warning", warn, warn=0.0),
    ]
    if t.error:
        return out
    values = gauges(t.snapshot, findings)

    def lim(rule: str) -> Limits:
        return Limits.of(catalogue, config, rule)

    pg = t.snapshot.engine == "postgresql"
    if "oldest_xact_seconds" in values:
        w, c = lim("PG001" if pg else "MY001").levels()
        out.append(Perf(f"{name}/oldest_xact", values["oldest_xact_seconds"], "s", w, c))
    if "pg.horizon_age_seconds" in values:
        w, c = lim("PG201").levels()
        out.append(Perf(f"{name}/horizon_age", values["pg.horizon_age_seconds"], "s", w, c))
    if "pg.horizon_xid_age" in values:
        w, c = lim("PG201").param_levels("xid_warning", "xid_critical")
        out.append(Perf(f"{name}/horizon_xids", values["pg.horizon_xid_age"], "", w, c))
    dead = [v for k, v in values.items() if k.startswith("pg.n_dead_tup:")]
    if (pg and t.snapshot.has("pg.dead_tuples")) or dead:
        w, c = lim("PG202").levels()
        out.append(Perf(f"{name}/dead_tuples_max", max(dead, default=0.0), "", w, c))
    if "innodb_history_list_length" in values:
        w, c = lim("MY201").levels()
        hll = values["innodb_history_list_length"]
        out.append(Perf(f"{name}/history_list_length", hll, "", w, c))
    out += _queue_perf(name, values, lim("QU001"))
    deadlocks = server_deadlocks(values)
    if deadlocks is not None:
        out.append(Perf(f"{name}/deadlocks", deadlocks, "c"))
    return out


def _queue_perf(name: str, values: dict[str, float], qu: Limits) -> list[Perf]:
    """Per queue table: the jobs ready to run (all its queues) and the oldest one's age."""
    depth: dict[str, float] = {}
    age: dict[str, float] = {}
    for key, v in values.items():
        kind, _, rest = key.partition(":")
        table = rest.rpartition("/")[0]
        if kind == "queue_depth":
            depth[table] = depth.get(table, 0.0) + v
            age.setdefault(table, 0.0)  # no job ready: the oldest is 0 s old
        elif kind == "queue_age_seconds":
            age[table] = max(age.get(table, 0.0), v)
    dw, dc = qu.param_levels("depth_warning", "depth_critical")
    aw, ac = qu.levels()
    out = []
    for table in sorted(depth):
        out.append(Perf(f"{name}/queue_depth:{table}", depth[table], "", dw, dc))
        out.append(Perf(f"{name}/queue_oldest:{table}", age[table], "s", aw, ac))
    return out


def _one_line(text: str) -> str:
    """Long text may not contain `|` (it starts the perfdata) nor break a line."""
    flat = " ".join(text.replace("|", "/").split())
    return flat if len(flat) <= LONG_TEXT_MAX else flat[: LONG_TEXT_MAX - 1] + "…"


def _finding_line(f: Finding) -> str:
    return _one_line(f"{f.severity.upper()} {f.rule} {f.target}: {f.subject} — {f.summary}")


def render_nagios(
    result: AuditResult,
    catalogue: dict[str, Rule],
    config: Config,
    missing: Sequence[str] = (),
) -> str:
    """`DBWATCH <STATUS> - <counts> | <totals>`, one line per finding (and per target not
    read), then `| <per-target perfdata>` one item a line. `missing`: targets that gave no
    result at all (watch --once: not answering)."""
    c = result.counts()
    status = "unknown" if missing and result.status != "critical" else result.status
    counts = result.status_line().split(" — ")[0]
    if missing:
        counts += f", {len(missing)} not answering"
    totals = [
        Perf("critical", c["critical"], crit=0.0),
        Perf("warning", c["warning"], warn=0.0),
        Perf("unreadable", c["unreadable"] + len(missing), crit=0.0),
        Perf("targets", len(result.targets) + len(missing)),
    ]
    head = f"DBWATCH {status.upper()} - {counts} | " + " ".join(p.render() for p in totals)
    lines = [_one_line(head.split(" | ")[0]) + " | " + head.split(" | ", 1)[1]]
    for t in result.targets:
        if t.error:
            lines.append(_one_line(f"UNKNOWN {t.spec.name}: unreachable: {t.error}"))
    lines += [_one_line(f"UNKNOWN {name}: not answering") for name in missing]
    lines += [_finding_line(f) for f in result.findings]
    perf = [p.render() for t in result.targets for p in target_perfdata(t, catalogue, config)]
    if perf:
        lines.append("| " + perf[0])
        lines += perf[1:]
    return scrub("\n".join(lines))
