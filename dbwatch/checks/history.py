"""What a check may ask of the daemon's history (the daemon's State satisfies it; a one-shot
audit has none). Pure: checks never import dbwatch.daemon."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class History(Protocol):
    def history(self, target: str, key: str, since_seconds: float) -> list[tuple[float, float]]:
        """(unix time, value) points of one series of `target` over the last `since_seconds`,
        oldest first."""
        ...


@runtime_checkable
class LastPoint(Protocol):
    def last_point(self, target: str, key: str, since_seconds: float) -> list[tuple[float, float]]:
        """The newest (unix time, value) point of one series within `since_seconds`, as a
        0- or 1-point list."""
        ...
