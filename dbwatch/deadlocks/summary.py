"""`deadlocks --summary`: counts by diagnosis, table, the victim's statement and hour."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from .record import DeadlockRecord

MAX_KEYS = 1000  # distinct keys kept per counter (hostile logs cannot grow it without bound)
SHOWN = 15


def _fingerprint(query: str | None) -> str:
    if not query:
        return "(no statement printed)"
    try:
        from ..sqlpatterns.fingerprint import fingerprint

        fp = fingerprint(query[:4096])[:300]
    except Exception:  # noqa: BLE001 - the fingerprinter is best effort on cut text
        fp = ""
    return fp or " ".join(query.split())[:120]


def _bump(c: Counter[str], key: str) -> None:
    if key in c or len(c) < MAX_KEYS:
        c[key] += 1
    else:
        c["(other)"] += 1


class Summary:
    def __init__(self) -> None:
        self.deadlocks = 0
        self.by_pattern: Counter[str] = Counter()
        self.by_table: Counter[str] = Counter()
        self.by_victim_statement: Counter[str] = Counter()
        self.by_hour: Counter[str] = Counter()
        self.victim_unknown = 0

    def add(self, dl: DeadlockRecord) -> None:
        self.deadlocks += 1
        _bump(self.by_pattern, dl.diagnosis.pattern or "generic")
        tables = {f"{lk.db}.{lk.table}" if lk.db else lk.table for lk in dl.locks if lk.table}
        for t in sorted(tables):
            _bump(self.by_table, t)
        victim = dl.victim_trx
        if victim is None:
            self.victim_unknown += 1
            _bump(self.by_victim_statement, "(victim not known)")
        else:
            _bump(self.by_victim_statement, _fingerprint(victim.query))
        at = dl.at or ""
        _bump(self.by_hour, f"{at[:13]}:00" if len(at) >= 13 else "(no time)")

    def to_dict(self) -> dict[str, object]:
        return {
            "deadlocks": self.deadlocks,
            "by_pattern": dict(self.by_pattern.most_common()),
            "by_table": dict(self.by_table.most_common()),
            "by_victim_statement": dict(self.by_victim_statement.most_common()),
            "by_hour": dict(sorted(self.by_hour.items())),
            "victim_unknown": self.victim_unknown,
        }

    def render(self, source: str) -> str:
        noun = "deadlock" if self.deadlocks == 1 else "deadlocks"
        out = [f"{self.deadlocks} {noun} in {source}"]
        for title, c in (
            ("By diagnosis", self.by_pattern),
            ("By table", self.by_table),
            ("By the victim's statement", self.by_victim_statement),
        ):
            out.append(f"\n{title}:")
            for key, n in c.most_common(SHOWN):
                out.append(f"  {n:>8,}  {key}")
            if len(c) > SHOWN:
                out.append(f"  … and {len(c) - SHOWN} more")
        out.append("\nPer hour:")
        for key, n in sorted(self.by_hour.items()):
            out.append(f"  {key}  {n:>8,}")
        return "\n".join(out)


def summarize(deadlocks: Iterable[DeadlockRecord]) -> Summary:
    s = Summary()
    for dl in deadlocks:
        s.add(dl)
    return s
