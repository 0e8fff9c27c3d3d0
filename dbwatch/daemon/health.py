"""Targets that do not answer: missed cycles counted per target, DW001 "target not answering".

A cycle is missed when the target gave no answer: the connection timed out, the cycle ran
past its deadline and was abandoned, or the previous cycle was still hanging when the next
was due. After `threshold` missed cycles in a row the target gets a DW001 finding of its own
(the fingerprint of the target's connect failure), so it fires and alerts like any finding; the first
cycle that gets an answer resolves it.
"""

from __future__ import annotations

import threading

from ..durations import plural
from ..findings import Finding
from ..frozen import frozen

SUBJECT = "target not answering"
# The identity of the connect failure's DW001 (dbwatch.checks.dw001_probe_failed): one
# finding per target for "cannot talk to it", so a connect timeout and missed cycles never alert twice.
IDENTITY = "connect"


@frozen
class Miss:
    count: int  # missed cycles in a row, this one included
    why: str


class Misses:
    """Consecutive missed cycles per target (thread-safe; one instance per daemon)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count: dict[str, int] = {}
        self._why: dict[str, str] = {}

    def missed(self, target: str, why: str) -> Miss:
        with self._lock:
            n = self._count.get(target, 0) + 1
            self._count[target] = n
            self._why[target] = why
            return Miss(n, why)

    def answered(self, target: str) -> None:
        with self._lock:
            self._count.pop(target, None)
            self._why.pop(target, None)

    def current(self, target: str) -> Miss | None:
        with self._lock:
            n = self._count.get(target)
            return Miss(n, self._why.get(target, "")) if n else None

    def forget(self, keep: set[str]) -> None:
        with self._lock:
            for name in [n for n in self._count if n not in keep]:
                self._count.pop(name, None)
                self._why.pop(name, None)


def not_answering(target: str, miss: Miss, threshold: int, interval: float) -> Finding:
    return Finding(
        rule="DW001",
        severity="critical",
        target=target,
        subject=SUBJECT,
        summary=(
            f"target not answering: {plural(miss.count, 'cycle')} missed in a row "
            f"(every {interval:g}s; last: {miss.why}); nothing on this target is being "
            "checked, its findings are as of the last answer"
        ),
        fix=(
            "Check that the server is up and not frozen (stopped process, full disk, "
            "exhausted connections), and the network path to it; dbwatch keeps trying "
            "every cycle, one connection at a time."
        ),
        evidence={"missed_cycles": miss.count, "threshold": threshold, "last_reason": miss.why},
        identity=IDENTITY,
    )
