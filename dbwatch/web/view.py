"""What the dashboard's pages and `dbwatch status` share: target staleness, bounded and
redacted text, the evidence worth showing, pagination."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import field
from urllib.parse import urlencode

from ..durations import format_duration
from ..frozen import frozen
from ..snapshot.values import to_float, to_str
from ..targets.secrets import redact, scrub

TEXT_CAP = 4000  # characters of one untrusted string shown (query text, deadlock queries)


@frozen
class Site:
    """What the pages know beside the state: targets' intervals and engines (from the config)."""

    intervals: Mapping[str, float] = field(default_factory=dict)
    engines: Mapping[str, str] = field(default_factory=dict)
    default_interval: float = 60.0


def stale_after(interval: float) -> float:
    """A target whose last cycle started longer ago than this has no live daemon behind it."""
    return max(3 * interval, interval + 60.0)


def cycle_status(cycle: Mapping[str, object], interval: float, now: float) -> str:
    """ok | degraded | unreachable | error | stale."""
    if now - to_float(cycle["started"]) > stale_after(interval):
        return "stale"
    return to_str(cycle["status"])


def ago(ts: float | None, now: float) -> str:
    return "never" if ts is None else f"{format_duration(now - ts)} ago"


def iso(ts: float | None) -> str:
    return "" if ts is None else time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(ts))


def cut(value: object, n: int = TEXT_CAP) -> str:
    # configured passwords (and pieces of them) masked, then any URL or key=value secret
    text = redact(scrub(value if value is not None else ""))
    return text if len(text) <= n else text[: n - 1] + "…"


def evidence_items(evidence: object, limit: int = 24) -> list[tuple[str, str]]:
    """The evidence as (key, text) pairs: scalars first, nested values as compact text."""
    if not isinstance(evidence, dict):
        return [("evidence", cut(evidence, 600))] if evidence else []
    out = []
    for k, v in evidence.items():
        if v is None or v == "" or v == [] or v == {}:
            continue
        text = v if isinstance(v, (str, int, float)) else compact(v)
        out.append((cut(k, 80), cut(text, 1200 if k == "query" else 600)))
        if len(out) >= limit:
            break
    return out


# what a paged person wants at a glance, in this order; the rest is behind "evidence"
_KEY_EVIDENCE = (
    "database",
    "table",
    "user",
    "application",
    "client_addr",
    "host",
    "state",
    "age",
    "dead_tuples",
    "n_dead_tup",
    "holder",
    "history_list_length",
    "queue",
    "available",
    "oldest_available",
    "library",
    "index",
    "scope",
)


def key_evidence(evidence: object, limit: int = 6) -> list[tuple[str, str]]:
    if not isinstance(evidence, dict):
        return []
    out = []
    for k in _KEY_EVIDENCE:
        v = evidence.get(k)
        if v is None or v == "" or isinstance(v, (dict, list)):
            continue
        out.append((k, cut(v, 120)))
        if len(out) >= limit:
            break
    return out


def compact(v: object) -> str:
    return json.dumps(v, default=str, ensure_ascii=False)[:1200]


def page_number(q: Mapping[str, str]) -> int:
    try:
        return max(0, min(int(q.get("page", "0")), 100000))
    except ValueError:
        return 0


def pager(
    path: str, q: Mapping[str, str], page: int, total: int, per: int
) -> dict[str, int | str | None]:
    pages = max(1, -(-total // per))
    keep = {k: v for k, v in q.items() if k in ("target", "table", "pattern", "since") and v}

    def link(n: int) -> str:
        return path + "?" + urlencode({**keep, "page": str(n)})

    return {
        "page": page + 1,
        "pages": pages,
        "prev": link(page - 1) if page > 0 else None,
        "next": link(page + 1) if page + 1 < pages else None,
        "first": page * per + 1 if total else 0,
        "last": min(total, (page + 1) * per),
    }
