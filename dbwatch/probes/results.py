"""What a probe returns besides plain driver rows: data with coverage gaps (`Covered`), data
with a privilege note (`PartialResult`), and driver rows made plain JSON values (`jsonable`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from datetime import time as dtime
from decimal import Decimal
from typing import Any

from ..frozen import frozen
from ..snapshot import CoverageGap


@frozen
class Covered:
    """A probe's data plus what it did not examine (caps, invisible objects): DW002 gaps.
    May wrap a PartialResult."""

    data: object
    gaps: tuple[CoverageGap, ...]


@frozen
class PartialResult:
    """Data that was readable, plus a note that privileges hid some of it."""

    data: object
    message: str
    grant: str | None = None
    privilege: bool = True  # False: not a privilege (a table's layout was not understood)
    fix: str | None = None  # the fix when it is not a GRANT


def jsonable(row: Mapping[str, object]) -> dict[str, Any]:
    """A driver row as plain JSON values: text for bytes and timestamps, numbers for
    Decimals, keys in lower case (MySQL's information_schema answers in upper case)."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, (date, dtime)):
            v = v.isoformat()
        elif isinstance(v, Decimal):
            v = int(v) if v == int(v) else float(v)
        out[str(k).lower()] = v
    return out
