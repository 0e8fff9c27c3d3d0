"""A check's reads of the daemon's series (the History protocol): the last point or the
window, [] in a one-shot audit, without state, or when the state cannot answer."""

from __future__ import annotations

from . import CheckContext
from .history import has_history, has_last_point

HISTORY_WINDOW = 3600.0


def latest(ctx: CheckContext, key: str, since: float = HISTORY_WINDOW) -> list[tuple[float, float]]:
    """The daemon's last point of key within `since` ([] when none), as a 0/1-point history:
    one row, not a week of points read each cycle for the last one."""
    st: object = ctx.state
    if not has_last_point(st):
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
    if not has_history(st):
        return []
    try:
        return [(float(t), float(v)) for t, v in st.history(ctx.snapshot.target, key, since)]
    except Exception:  # noqa: BLE001 - history is a nicety; a state problem must not hide the finding
        return []
