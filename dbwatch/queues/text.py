"""Bounded text a queue probe returns: attempts column limits, job classes cut out of JSON
payloads by SQL, payload timeouts. Pure; never raises on hostile input."""

from __future__ import annotations

import json
import re

_INT_LIMITS = {
    "tinyint": 127,
    "smallint": 32767,
    "mediumint": 8388607,
    "int": 2147483647,
    "integer": 2147483647,
    "bigint": 2**63 - 1,
}


def attempts_limit(column_type: str | None) -> int | None:
    """The largest value an attempts column can hold: 'tinyint(3) unsigned' -> 255."""
    if not column_type:
        return None
    text = column_type.lower()
    base = re.match(r"[a-z]+", text)
    if base is None or base.group(0) not in _INT_LIMITS:
        return None
    limit = _INT_LIMITS[base.group(0)]
    return limit * 2 + 1 if "unsigned" in text else limit


def job_class(raw: str | None) -> str | None:
    """A class name cut out of JSON text by SQL: undo JSON escapes, never raise."""
    if raw is None:
        return None
    text = str(raw)[:255]
    try:
        decoded: object = json.loads(f'"{text}"')
    except (ValueError, TypeError):
        decoded = text.replace("\\\\", "\\").replace("\\/", "/")
    value = "".join(ch for ch in str(decoded) if ch.isprintable()).strip()
    return value or None


def payload_timeout(head: str | None) -> int | None:
    """Leading digits of what follows '"timeout":' in a payload (null/absent -> None)."""
    if head is None:
        return None
    m = re.match(r"\s*(\d{1,9})", str(head))
    return int(m.group(1)) if m else None
