"""Secrets never leave: the one scrubbing function, used wherever text leaves the process.

Every password dbwatch learns (from a URL, a password file, PGPASSWORD, MYSQL_PWD) is
registered here. scrub() removes each of them, and every fragment of 4 or more characters,
case-insensitively, in plain and percent-encoded form, from a text before it is shown,
logged, stored in the state DB or sent in an alert. redact() adds what no registration
knows: a password inside any URL or `password=` pair of a text (a stored error, say).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from ..frozen import frozen

MASK = "***"
MIN_FRAGMENT = 4  # shorter pieces of a password are too common to scrub from every message
MAX_WINDOW = 64
MIN_SECRET = 3  # a whole password this short is still masked where it appears whole
ENV_SECRETS = ("PGPASSWORD", "MYSQL_PWD")


@frozen
class _Pattern:
    """One secret's lower-cased fragments, prepared once (scrub runs on every log line)."""

    frags: frozenset[str]
    longest: int
    shortest: int
    heads: frozenset[str]  # every fragment starts with one: a linear pre-filter

    @classmethod
    def of(cls, secret: str, public: frozenset[str] = frozenset()) -> _Pattern:
        """Fragments that are also part of a public name of the same target (its user,
        host, database: printed by design) are not masked; the whole secret always is."""
        frags = frozenset(f for f in _fragments_of(secret) if not any(f in p for p in public)) | {
            secret.lower()
        }
        shortest = min(len(f) for f in frags)
        return cls(
            frags, max(len(f) for f in frags), shortest, frozenset(f[:shortest] for f in frags)
        )


_lock = threading.Lock()
_patterns: dict[str, _Pattern] = {}  # secret (and its percent-encoded form) -> pattern
_public: dict[str, frozenset[str]] = {}  # secret -> the public names registered with it
_generation = [0]  # moves whenever what scrub() masks changes (State keeps text scrubbed before)


def register_secret(secret: str | None, public: Iterable[str | None] = ()) -> None:
    """Remember a password so every later scrub() removes it (process-wide). `public`: the
    target's own non-secret names (user, host, database, its redacted URL)."""
    if not secret or len(secret) < MIN_SECRET:
        return
    names = frozenset(str(p).lower() for p in public if p)
    for variant in {secret, quote(secret, safe="")}:
        with _lock:
            known = _public.get(variant)
            if known is not None and names <= known:
                continue
            merged = (known or frozenset()) | names
        pattern = _Pattern.of(variant, merged)
        with _lock:
            _public[variant] = merged
            _patterns[variant] = pattern
            _generation[0] += 1


def _fragments_of(secret: str) -> frozenset[str]:
    low = secret.lower()
    n = len(low)
    if n < MIN_FRAGMENT:
        return frozenset({low})
    # windows up to MAX_WINDOW long: a longer run is masked as consecutive windows
    return frozenset(
        low[i:j] for i in range(n) for j in range(i + MIN_FRAGMENT, min(n, i + MAX_WINDOW) + 1)
    )


def _known(extra: Iterable[str | None]) -> list[_Pattern]:
    for name in ENV_SECRETS:
        register_secret(os.environ.get(name))
    for secret in extra:
        register_secret(secret)
    with _lock:
        return list(_patterns.values())


def scrub(text: object, extra: Iterable[str | None] = ()) -> str:
    """The text with every registered password (and `extra`) and every fragment of one
    (>= 4 characters, any case) replaced by ***."""
    out = str(text)
    for pattern in _known(extra):
        out = _mask(out, pattern)
    return out


_URL_SECRET = re.compile(
    r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^:/@\s]*):[^@/\s]*@", re.IGNORECASE
)
# MySQL's "Access denied … (using password: YES)" says whether one was sent, not what it is:
# that phrase is kept whole (masking it told nothing and cut the message's parenthesis)
_KV_SECRET = re.compile(
    r"(?P<k>\b(?<!using )(?:password|passwd|pwd|secret|token)\s*[=:]\s*)\S+",
    re.IGNORECASE,
)


def redact(text: str) -> str:
    """Passwords out of URLs and key=value pairs; whatever else is in the text stays."""
    text = _URL_SECRET.sub(lambda m: f"{m['scheme']}{m['user']}:***@", text)
    return _KV_SECRET.sub(lambda m: f"{m['k']}***", text)


def scrub_opt(text: str | None) -> str | None:
    return None if text is None else scrub(text)


def secrets_known() -> bool:
    """Whether any password is registered (else scrub_tree leaves every string as it is)."""
    return bool(_patterns)


def secrets_generation() -> int:
    """A number that changes whenever a password is registered or its public names change:
    text scrubbed under one generation is what scrub() would give while it stays the same."""
    return _generation[0]


def scrub_tree(value: Any) -> Any:
    """scrub() applied to every string (keys too) of a JSON-like structure."""
    if isinstance(value, str):
        return scrub(value) if _patterns else value
    if isinstance(value, dict):
        return {scrub_tree(k): scrub_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_tree(v) for v in value]
    return value


def _starts(low: str, heads: frozenset[str]) -> list[int]:
    """Every position where a fragment may start (str.find runs at C speed)."""
    out: set[int] = set()
    for head in heads:
        pos = low.find(head)
        while pos >= 0:
            out.add(pos)
            pos = low.find(head, pos + 1)
    return sorted(out)


def _mask(text: str, p: _Pattern) -> str:
    low = text.lower()
    starts = _starts(low, p.heads)
    if not starts:
        return text
    pieces: list[str] = []
    start = 0  # text[start:] is not yet copied; masks never overlap
    for i in starts:
        if i < start:
            continue
        for size in range(min(p.longest, len(text) - i), p.shortest - 1, -1):
            if low[i : i + size] in p.frags:
                pieces += [text[start:i], MASK]
                start = i + size
                break
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
