"""What a check may ask of the daemon's history (the daemon's State satisfies it; a one-shot
audit has none). Pure: checks never import dbwatch.daemon."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from . import CheckContext

HISTORY_WINDOW = 3600.0


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


def latest(ctx: CheckContext, key: str, since: float = HISTORY_WINDOW) -> list[tuple[float, float]]:
    """The daemon's last point of key within `since` ([] when none), as a 0/1-point history:
    one row, not a week of points read each cycle for the last one."""
    st: object = ctx.state
    if not isinstance(st, LastPoint):
        return history(ctx, key, since)[-1:]
    try:
        return [(float(t), float(v)) for t, v in st.last_point(ctx.snapshot.target, key, since)]
    except Exception:  # noqa: BLE001 - history is a nicety; a state problem must not hide the finding
        return []


def history(
    ctx: CheckContext, key: str, since: float = HISTORY_WINDOW
) -> list[tuple[float, float]]:
    """The daemon's history for key, oldest first; [] in a one-shot audit or without state."""
    st: object = ctx.state
    if not isinstance(st, History):
        return []
    try:
        return [(float(t), float(v)) for t, v in st.history(ctx.snapshot.target, key, since)]
    except Exception:  # noqa: BLE001 - history is a nicety; a state problem must not hide the finding
        return []
