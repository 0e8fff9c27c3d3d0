"""Parse and format durations ("90s", "5m", "1h30m", "2d") and plain counts ("10k")."""

from __future__ import annotations

import re
from functools import lru_cache

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_COUNT = re.compile(r"^(\d+(?:\.\d+)?)([kKmMgG]?)$")


def parse_duration(value: object) -> float:
    """Seconds from "5m", "1h30m", "250ms", or a bare number of seconds."""
    if isinstance(value, bool):
        raise TypeError(f"not a duration: {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"negative duration: {value!r}")
        return float(value)
    return _parse_text(str(value))


@lru_cache(maxsize=256)
def _parse_text(value: str) -> float:
    """A duration's text, parsed once (rule parameters are read every daemon cycle)."""
    text = value.strip().lower().replace(" ", "")
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    pos, total = 0, 0.0
    for m in _PART.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise ValueError(f"not a duration: {value!r} (use e.g. 30s, 5m, 1h30m)")
    return total


def parse_count(value: object) -> float:
    """A number, with an optional k/M/G suffix ("10k" -> 10000)."""
    if isinstance(value, bool):
        raise TypeError(f"not a number: {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    m = _COUNT.match(str(value).strip())
    if not m:
        raise ValueError(f"not a number: {value!r} (use e.g. 10000 or 10k)")
    mult = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2).lower()]
    return float(m.group(1)) * mult


def format_duration(seconds: float | None) -> str:
    """Compact human form: 45s, 12m05s, 3h02m, 2d04h."""
    if seconds is None:
        return "?"
    s = round(max(seconds, 0))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"


def plural(n: int, word: str, many: str | None = None) -> str:
    """A count with its noun: `1 row`, `2 rows` (`many` for irregular plurals)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"
