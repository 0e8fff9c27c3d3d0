"""Secrets never leave: the one scrubbing function, used wherever text leaves the process.

Every password dbwatch learns (from a URL, a password file, PGPASSWORD, MYSQL_PWD) is
registered here. scrub() removes each of them, and every fragment of 4 or more characters,
case-insensitively, in plain and percent-encoded form, from a text before it is shown,
logged, stored in the state DB or sent in an alert.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

MASK = "***"
MIN_FRAGMENT = 4  # shorter pieces of a password are too common to scrub from every message
MAX_WINDOW = 64
MIN_SECRET = 3  # a whole password this short is still masked where it appears whole
ENV_SECRETS = ("PGPASSWORD", "MYSQL_PWD")

_lock = threading.Lock()
_secrets: set[str] = set()
_fragments: dict[str, frozenset[str]] = {}  # secret -> its lower-cased fragments


def register_secret(secret: str | None) -> None:
    """Remember a password so every later scrub() removes it (process-wide)."""
    if not secret or len(secret) < MIN_SECRET:
        return
    with _lock:
        for variant in {secret, quote(secret, safe="")}:
            if variant not in _fragments:
                _secrets.add(variant)
                _fragments[variant] = _fragments_of(variant)


def _fragments_of(secret: str) -> frozenset[str]:
    low = secret.lower()
    n = len(low)
    if n < MIN_FRAGMENT:
        return frozenset({low})
    # windows up to MAX_WINDOW long: a longer run is masked as consecutive windows
    return frozenset(
        low[i:j] for i in range(n) for j in range(i + MIN_FRAGMENT, min(n, i + MAX_WINDOW) + 1)
    )


def _known(extra: Iterable[str | None]) -> list[frozenset[str]]:
    for name in ENV_SECRETS:
        register_secret(os.environ.get(name))
    for secret in extra:
        register_secret(secret)
    with _lock:
        return list(_fragments.values())


def scrub(text: object, extra: Iterable[str | None] = ()) -> str:
    """The text with every registered password (and `extra`) and every fragment of one
    (>= 4 characters, any case) replaced by ***."""
    out = str(text)
    for frags in _known(extra):
        longest = max((len(f) for f in frags), default=0)
        if longest == 0:
            continue
        out = _mask(out, frags, longest)
    return out


def scrub_opt(text: str | None) -> str | None:
    return None if text is None else scrub(text)


def scrub_tree(value: Any) -> Any:
    """scrub() applied to every string (keys too) of a JSON-like structure."""
    if isinstance(value, str):
        return scrub(value) if _fragments else value
    if isinstance(value, dict):
        return {scrub_tree(k): scrub_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_tree(v) for v in value]
    return value


def _mask(text: str, frags: frozenset[str], longest: int) -> str:
    low = text.lower()
    shortest = min(len(f) for f in frags)
    pieces: list[str] = []
    i = start = 0
    n = len(text)
    while i < n:
        hit = 0
        for size in range(min(longest, n - i), shortest - 1, -1):
            if low[i : i + size] in frags:
                hit = size
                break
        if hit:
            pieces.append(text[start:i])
            pieces.append(MASK)
            i += hit
            start = i
        else:
            i += 1
    pieces.append(text[start:])
    return "".join(pieces)


class ScrubFilter(logging.Filter):
    """A handler filter: every log record's message (and traceback) scrubbed before output."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is still logged, as text
            message = str(record.msg)
        record.msg, record.args = scrub(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True


def install_log_filter(handlers: Iterable[logging.Handler] | None = None) -> None:
    """Scrub every record on these handlers (default: the root logger's)."""
    for handler in handlers if handlers is not None else logging.getLogger().handlers:
        if not any(isinstance(f, ScrubFilter) for f in handler.filters):
            handler.addFilter(ScrubFilter())
