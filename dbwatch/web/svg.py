"""SVG charts rendered by dbwatch itself: time-series lines with event marks, and hourly bars.

Output is markup built only from numbers and escaped labels; colours come from CSS classes
and presentation attributes, so the page's Content-Security-Policy needs no inline style.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from html import escape

from markupsafe import Markup

from ..durations import format_duration
from ..frozen import frozen

PALETTE = ("#2563eb", "#db2777", "#059669", "#d97706", "#7c3aed", "#0891b2", "#65a30d", "#dc2626")
W, H = 560, 200
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 12, 26
MARK_PX = 6  # events closer than this share one mark


@frozen
class Line:
    label: str
    points: Sequence[tuple[float, float]]


@frozen
class Mark:
    ts: float
    kind: str  # critical | warning | unknown | action
    label: str


def human(value: float, unit: str = "") -> str:
    if unit == "s":
        return format_duration(value)
    a = abs(value)
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            return f"{value / div:.3g}{suffix}"
    return f"{value:.3g}" if a < 1000 and value != int(value) else f"{int(value)}"


_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600)


def _nice_max(v: float, unit: str = "") -> float:
    """The top of the y axis: four equal steps of a round size (seconds: round durations)."""
    if v <= 0:
        return 4.0 if unit in ("s", "count") else 1.0
    if unit == "s":
        step = next((st for st in _TIME_STEPS if 4 * st >= v), None)
        if step is None:
            step = math.ceil(v / 4 / 43200) * 43200
        return float(4 * step)
    if unit == "count":
        return float(4 * math.ceil(v / 4)) if v <= 40 else _nice_max(v)
    exp = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if v <= m * exp:
            return float(m * exp)
    return float(10 * exp)


def _time_ticks(since: float, until: float, n: int = 6) -> list[tuple[float, str]]:
    span = max(until - since, 1.0)
    steps = (60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)
    step = next((s for s in steps if span / s <= n), steps[-1])
    first = math.ceil(since / step) * step
    fmt = "%H:%M" if step < 86400 else "%m-%d"
    out: list[tuple[float, str]] = []
    t = float(first)
    while t <= until and len(out) < 20:
        label = time.strftime(fmt, time.gmtime(t))
        if step < 86400 and time.gmtime(t).tm_hour == 0 and time.gmtime(t).tm_min == 0:
            label = time.strftime("%m-%d", time.gmtime(t))
        out.append((t, label))
        t += step
    return out


class _Frame:
    def __init__(self, since: float, until: float, ymax: float, unit: str, width: int) -> None:
        self.since, self.until = since, max(until, since + 1)
        self.ymax = _nice_max(ymax, unit)
        self.w = width
        self.pw, self.ph = width - LEFT - RIGHT, H - TOP - BOTTOM

    def x(self, ts: float) -> float:
        return LEFT + (ts - self.since) / (self.until - self.since) * self.pw

    def y(self, v: float) -> float:
        return TOP + self.ph - (max(v, 0.0) / self.ymax) * self.ph

    def axes(self, unit: str) -> list[str]:
        out = []
        for i in range(5):
            v = self.ymax * i / 4
            y = self.y(v)
            out.append(
                f'<line class="grid" x1="{LEFT}" x2="{self.w - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
            )
            out.append(
                f'<text class="ylab" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                f"{escape(human(v, unit))}</text>"
            )
        for t, label in _time_ticks(self.since, self.until):
            x = self.x(t)
            out.append(
                f'<line class="tick" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP + self.ph}" '
                f'y2="{TOP + self.ph + 4}"/>'
            )
            out.append(
                f'<text class="xlab" x="{x:.1f}" y="{H - 8}" text-anchor="middle">'
                f"{escape(label)}</text>"
            )
        out.append(
            f'<line class="axis" x1="{LEFT}" x2="{self.w - RIGHT}" y1="{TOP + self.ph}" '
            f'y2="{TOP + self.ph}"/>'
        )
        return out

    def marks(self, marks: Sequence[Mark]) -> list[str]:
        """Events within a few pixels of each other share one mark (bounded markup)."""
        groups: dict[tuple[str, int], list[Mark]] = {}
        for m in sorted(marks, key=lambda m: m.ts):
            if not self.since <= m.ts <= self.until:
                continue
            kind = m.kind if m.kind in ("critical", "warning", "unknown", "action") else "warning"
            groups.setdefault((kind, int(self.x(m.ts) // MARK_PX)), []).append(m)
        out = []
        order = {"action": 0, "warning": 1, "unknown": 2, "critical": 3}  # critical on top
        for (kind, _), ms in sorted(groups.items(), key=lambda kv: order[kv[0][0]]):
            x = self.x(ms[0].ts)
            first = f"{time.strftime('%Y-%m-%d %H:%M:%SZ', time.gmtime(ms[0].ts))} {ms[0].label}"
            more = f" (+{len(ms) - 1} more here)" if len(ms) > 1 else ""
            out.append(
                f'<g class="mark {kind}"><title>{escape(first[:300] + more)}</title>'
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + self.ph}"/>'
                f'<path d="M{x - 4:.1f},{TOP} L{x + 4:.1f},{TOP} L{x:.1f},{TOP + 7} Z"/></g>'
            )
        return out


def _svg(title: str, body: list[str], width: int) -> Markup:
    head = (
        f'<svg class="chart" viewBox="0 0 {width} {H}" width="100%" role="img" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
    )
    return Markup(head + "".join(body) + "</svg>")


def line_chart(
    title: str,
    lines: Sequence[Line],
    since: float,
    until: float,
    marks: Sequence[Mark] = (),
    unit: str = "",
    width: int = W,
) -> Markup:
    """One chart; each line keeps its colour index, which the legend reuses."""
    ymax = max((v for ln in lines for _, v in ln.points), default=0.0)
    fr = _Frame(since, until, ymax, unit, width)
    body = fr.axes(unit)
    for i, ln in enumerate(lines):
        pts = [(fr.x(t), fr.y(v)) for t, v in ln.points]
        if not pts:
            continue
        colour = PALETTE[i % len(PALETTE)]
        d = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        last_v = ln.points[-1][1]
        tip = escape(f"{ln.label}: {human(last_v, unit)} (latest)")
        body.append(
            f'<g class="series"><title>{tip}</title><polyline points="{d}" fill="none" '
            f'stroke="{colour}" stroke-width="1.8" stroke-linejoin="round"/>'
        )
        if len(pts) == 1:
            body.append(
                f'<circle cx="{pts[0][0]:.1f}" cy="{pts[0][1]:.1f}" r="3" fill="{colour}"/>'
            )
        body.append("</g>")
    body += fr.marks(marks)
    if not any(ln.points for ln in lines):
        body.append(
            f'<text class="empty" x="{width / 2}" y="{H / 2}" text-anchor="middle">'
            "no data in this window</text>"
        )
    return _svg(title, body, width)


def bar_chart(
    title: str,
    buckets: Sequence[tuple[float, int]],
    since: float,
    until: float,
    step: float,
    width: int = 1100,
) -> Markup:
    """Counts per bucket of `step` seconds (deadlocks per hour)."""
    fr = _Frame(since, until, float(max((n for _, n in buckets), default=0)), "count", width)
    body = fr.axes("")
    bw = max(1.0, fr.pw * step / (fr.until - fr.since) - 1)
    for t, n in buckets:
        if not since <= t <= until or n <= 0:
            continue
        x, y = fr.x(t), fr.y(n)
        bw_here = max(1.0, min(bw, fr.x(until) - x))  # the current hour is drawn up to now
        tip = escape(f"{time.strftime('%Y-%m-%d %H:00Z', time.gmtime(t))}: {n}")
        body.append(
            f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{bw_here:.1f}" '
            f'height="{TOP + fr.ph - y:.1f}"><title>{tip}</title></rect>'
        )
    if not buckets:
        body.append(
            f'<text class="empty" x="{width / 2}" y="{H / 2}" text-anchor="middle">'
            "no deadlocks in this window</text>"
        )
    return _svg(title, body, width)
