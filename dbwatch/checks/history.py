"""What a check may ask of the daemon's history (the daemon's State satisfies it; a one-shot
audit has none). Pure: checks never import dbwatch.daemon."""

from __future__ import annotations

from typing import Protocol, TypeGuard, runtime_checkable


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


_CLASS_HAS: dict[tuple[type, type], bool] = {}


def class_has(cls: type, proto: type) -> bool:
    """issubclass(cls, proto) for a runtime-checkable protocol of methods, remembered per
    class: isinstance against a protocol (a hasattr per member, ~8 µs) ran several times a
    cycle."""
    got = _CLASS_HAS.get((cls, proto))
    if got is None:
        got = _CLASS_HAS[(cls, proto)] = issubclass(cls, proto)
    return got


def has_history(obj: object) -> TypeGuard[History]:
    return class_has(type(obj), History) or isinstance(obj, History)


def has_last_point(obj: object) -> TypeGuard[LastPoint]:
    return class_has(type(obj), LastPoint) or isinstance(obj, LastPoint)
