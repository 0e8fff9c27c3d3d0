"""The dashboard's pages: each builds a bounded context from the state and renders a template.

Templates are Jinja2 with autoescaping on, so every string from the state (other sessions'
query text, application and table names, deadlock text) is escaped unless it is markup
dbwatch built itself (the SVG charts, from numbers and escaped labels).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from .. import __version__
from ..durations import format_duration
from ..frozen import frozen
from ..records import ActionRecord, DeadlockRecord, json_object
from ..snapshot.values import JSON, JSONObject, opt_float, to_float, to_str
from ..statereader import StateReader
from . import svg
from .view import (
    Site,
    ago,
    cut,
    cycle_status,
    evidence_items,
    iso,
    key_evidence,
    page_number,
    pager,
)

WINDOWS = {"1h": 3600.0, "6h": 6 * 3600.0, "24h": 86400.0, "7d": 7 * 86400.0}
FINDINGS_PER_PAGE = 100
DEADLOCKS_PER_PAGE = 20
ACTIONS_PER_PAGE = 100
LINES_PER_CHART = 8
CHART_POINTS = 240


_Cached = tuple[int, list[tuple[float, int]], dict[str, list[str]]]


class Pages:
    def __init__(self, reader: Callable[[], StateReader], site: Callable[[], Site]) -> None:
        self.reader = reader
        self.site = site
        self._lock = threading.Lock()
        self._cache: dict[tuple[Any, ...], _Cached] = {}
        self.env = Environment(
            loader=PackageLoader("dbwatch.web", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.globals.update(version=__version__, iso=iso)
        self.env.filters.update(cut=cut, human=svg.human, duration=format_duration)

    def render(self, name: str, path: str, **ctx: Any) -> str:
        tpl = self.env.get_template(name)
        return tpl.render(path=path, now_iso=iso(time.time()), **ctx)

    # -- / ---------------------------------------------------------------------------------

    def index(self, q: Mapping[str, str]) -> str:
        now, site, st = time.time(), self.site(), self.reader()
        targets = []
        seen = set()
        for c in st.cycles():
            name = str(c["target"])
            seen.add(name)
            interval = site.intervals.get(name, site.default_interval)
            targets.append(
                {
                    "name": name,
                    "engine": site.engines.get(name, ""),
                    "status": cycle_status(c, interval, now),
                    "age": ago(opt_float(c["started"]), now),
                    "started": iso(opt_float(c["started"])),
                    "duration": f"{to_float(c['duration']):.2f} s",
                    "interval": format_duration(interval),
                    "findings": c["findings"],
                    "error": cut(c["error"] or "", 300),
                }
            )
        for name in sorted(set(site.intervals) - seen):
            targets.append(
                {
                    "name": name,
                    "engine": site.engines.get(name, ""),
                    "status": "no cycle yet",
                    "age": "never",
                    "started": "",
                    "duration": "",
                    "findings": "",
                    "error": "",
                    "interval": format_duration(site.intervals[name]),
                }
            )
        page = page_number(q)
        res = st.findings(
            "firing", q.get("target") or None, FINDINGS_PER_PAGE, page * FINDINGS_PER_PAGE
        )
        groups: dict[str, list[dict[str, object]]] = {}
        for r in res.rows:
            since = to_float(r["fired_at"] or r["first_seen"])
            data = json_object(r["data"])
            groups.setdefault(to_str(r["severity"]), []).append(
                {
                    "rule": r["rule"],
                    "target": r["target"],
                    "subject": cut(r["subject"], 300),
                    "summary": cut(data.get("summary", ""), 2000),
                    "fix": cut(data.get("fix", ""), 8000),
                    "evidence": evidence_items(data.get("evidence")),
                    "key_evidence": key_evidence(data.get("evidence")),
                    "since": iso(since),
                    "for": format_duration(now - since),
                    "fingerprint": r["fingerprint"],
                }
            )
        return self.render(
            "index.html",
            "/",
            targets=targets,
            counts=st.severity_counts(),
            groups=[(s, groups[s]) for s in ("critical", "unknown", "warning") if s in groups],
            pager=pager("/", q, page, res.total, FINDINGS_PER_PAGE),
            total=res.total,
            only=q.get("target") or "",
        )

    # -- /deadlocks --------------------------------------------------------------------------

    def deadlocks(self, q: Mapping[str, str]) -> str:
        now, st = time.time(), self.reader()
        target = q.get("target") or None
        table = q.get("table") or None
        pattern = q.get("pattern") or None
        window = q.get("since", "")
        window = window if window in WINDOWS else "24h"
        since = (now - WINDOWS[window]) // 3600 * 3600
        page = page_number(q)
        # deadlocks are only ever added or pruned: counts, chart and form are cached per version
        key = (st.deadlock_version(), target, table, pattern, since)
        cached = self._cache.get(key)
        if cached is None:
            cached = (
                st.deadlock_total(target, table, pattern),
                st.deadlocks_per_hour(target, table, pattern, since),
                st.deadlock_facets(),
            )
            with self._lock:
                if len(self._cache) > 64:
                    self._cache.clear()
                self._cache[key] = cached
        total, hourly, facets = cached
        res = st.deadlocks(
            target, table, pattern, 0.0, DEADLOCKS_PER_PAGE, page * DEADLOCKS_PER_PAGE, total
        )
        chart = svg.bar_chart("deadlocks per hour", hourly, since, now, 3600.0)
        items = []
        for r in res.rows:
            d = DeadlockRecord.from_json(r["data"])
            diag = d.diagnosis
            items.append(
                {
                    "target": r["target"],
                    "at": cut(d.at or r.get("at") or "", 60),
                    "seen": iso(opt_float(r["seen_at"])),
                    "pattern": cut(diag.pattern or "generic", 80),
                    "rules": [cut(x, 20) for x in diag.rules][:10],
                    "explanation": cut(diag.explanation, 2000),
                    "fix": cut(diag.fix, 4000),
                    "victim_inferred": d.victim_inferred,
                    "transactions": d.transactions[:20],
                    "locks": d.locks[:40],
                }
            )
        return self.render(
            "deadlocks.html",
            "/deadlocks",
            items=items,
            total=res.total,
            chart=chart,
            hourly_total=sum(n for _, n in hourly),
            facets=facets,
            f={
                "target": target or "",
                "table": table or "",
                "pattern": pattern or "",
                "since": window,
            },
            windows=list(WINDOWS),
            pager=pager("/deadlocks", q, page, res.total, DEADLOCKS_PER_PAGE),
        )

    # -- /history ------------------------------------------------------------------------------

    def history(self, q: Mapping[str, str]) -> str:
        now, st = time.time(), self.reader()
        window = q.get("since", "")
        window = window if window in WINDOWS else "6h"
        since = now - WINDOWS[window]
        only = q.get("target") or None
        keys = st.series_keys(since)
        by_target: dict[str, list[JSONObject]] = {}
        for k in keys:
            by_target.setdefault(str(k["target"]), []).append(k)
        fired = st.fired_since(since, now)
        acts = st.actions(since, None, 500).rows
        sections = []
        for target in sorted(by_target):
            if only and target != only:
                continue
            marks = [
                svg.Mark(
                    to_float(f["fired_at"]),
                    str(f["severity"]),
                    f"{f['rule']} {f['severity']}: {f['subject']}",
                )
                for f in fired
                if f["target"] == target
            ] + [
                svg.Mark(to_float(a["ts"]), "action", f"{a['action']} {a['subject']} ({a['rule']})")
                for a in acts
                if a["target"] == target
            ]
            charts = []
            for spec in _CHARTS:
                lines, more = self._lines(st, target, by_target[target], spec, since, now)
                if lines:
                    charts.append(
                        {
                            "title": spec.title,
                            "svg": svg.line_chart(spec.title, lines, since, now, marks, spec.unit),
                            "legend": [
                                (
                                    svg.PALETTE[i % len(svg.PALETTE)],
                                    cut(ln.label, 200),
                                    svg.human(ln.points[-1][1], spec.unit) if ln.points else "",
                                )
                                for i, ln in enumerate(lines)
                            ],
                            "more": more,
                        }
                    )
            sections.append({"target": target, "charts": charts, "marks": len(marks)})
        return self.render(
            "history.html",
            "/history",
            sections=sections,
            window=window,
            windows=list(WINDOWS),
            targets=sorted(by_target),
            only=only or "",
        )

    def _lines(
        self,
        st: StateReader,
        target: str,
        keys: list[JSONObject],
        spec: ChartSpec,
        since: float,
        now: float,
    ) -> tuple[list[svg.Line], int]:
        mine = [k for k in keys if spec.matches(str(k["key"]))]
        mine.sort(key=lambda k: -to_float(k["peak"]))
        out = []
        for k in mine[:LINES_PER_CHART]:
            key = str(k["key"])
            label = key.split(":", 1)[1] if ":" in key and spec.prefix else spec.title
            out.append(svg.Line(label, st.series(target, key, since, now, CHART_POINTS)))
        return out, max(0, len(mine) - LINES_PER_CHART)

    # -- /actions ------------------------------------------------------------------------------

    def actions(self, q: Mapping[str, str]) -> str:
        st = self.reader()
        page = page_number(q)
        res = st.actions(0.0, q.get("target") or None, ACTIONS_PER_PAGE, page * ACTIONS_PER_PAGE)
        rows = []
        for a in res.rows:
            raw = a["detail"]
            d = ActionRecord.from_json(raw)
            rows.append(
                {
                    "when": iso(opt_float(a["ts"])),
                    "target": a["target"],
                    "action": a["action"],
                    "rule": a["rule"] or "",
                    "subject": cut(a["subject"] or "", 200),
                    "who": cut(d.who, 200),
                    # a detail that is not a record (text) is shown as it is
                    "reason": cut(
                        d.reason or (raw if not raw or not isinstance(raw, dict) else ""), 2000
                    ),
                    "statement": cut(d.text("statement"), 2000),
                    "query": cut(d.text("query"), 1000),
                    "dry_run": d.dry_run,
                    "finding": cut(d.finding, 1000),
                }
            )
        return self.render(
            "actions.html",
            "/actions",
            rows=rows,
            total=res.total,
            pager=pager("/actions", q, page, res.total, ACTIONS_PER_PAGE),
        )


@frozen
class ChartSpec:
    title: str
    keys: tuple[str, ...]  # exact keys, or prefixes ending in ':'
    unit: str = ""
    prefix: bool = False

    def matches(self, key: str) -> bool:
        return any(key.startswith(k) if k.endswith(":") else key == k for k in self.keys)


_CHARTS = (
    ChartSpec("dead tuples per table", ("pg.n_dead_tup:",), prefix=True),
    ChartSpec("xmin horizon age", ("pg.horizon_age_seconds",), unit="s"),
    ChartSpec("xmin horizon age (XIDs)", ("pg.horizon_xid_age",)),
    ChartSpec("oldest open transaction", ("oldest_xact_seconds",), unit="s"),
    ChartSpec("InnoDB history list length", ("innodb_history_list_length",)),
    ChartSpec("queue depth (available jobs)", ("queue_depth:",), prefix=True),
    ChartSpec("oldest available job", ("queue_age_seconds:",), unit="s", prefix=True),
)


def _list(v: JSON) -> list[JSON]:
    return v if isinstance(v, list) else []
