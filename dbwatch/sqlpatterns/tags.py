"""Framework tags in SQL comments: sqlcommenter (`key='url-encoded value'`) and the
marginalia / Rails query-log-tags style (`key:value`), wherever they stand in a statement.

Untrusted text: bounded (16 KiB scanned, 32 tags, 200 characters a value), scanned once
left to right (quotes skipped so a literal cannot pose as a tag), values shown as text only:
control characters stripped, secrets masked. Nothing here is ever interpreted or executed.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote

from ..frozen import frozen
from ..targets.secrets import MASK, scrub

MAX_INPUT = 16 * 1024  # characters of a statement scanned
MAX_TAGS = 32
MAX_VALUE = 200  # characters kept of one value (after decoding)
MAX_KEY = 64
MAX_COMMENTS = 16  # block comments looked at per statement
MAX_BODY = 4096  # characters of one comment parsed as tags
# a lexical token start: quotes, block and line comments (one alternation: linear)
_TOKEN = re.compile(r"'|\"|`|/\*|--")
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-%")
# a key naming a credential: its value is never shown
_SECRET_KEYS: tuple[str, ...] = ("password", "passwd", "pwd", "secret", "token", "apikey")
_SECRET_KEYS += ("api_key", "auth", "cookie", "session_id", "sessionid", "credential")
_SECRET_KEYS += ("signature", "private")
# well-known keys, by meaning (sqlcommenter, Rails, marginalia, Django, Flask, Laravel, knex)
ALIASES: dict[str, tuple[str, ...]] = {
    "application": ("application", "app", "app_name", "application_name", "service"),
    "controller": ("controller", "namespaced_controller", "endpoint"),
    "action": ("action",),
    "route": ("route", "http.route", "path"),
    "job": ("job", "job_class", "job_name", "sidekiq_job", "task"),
    "framework": ("framework",),
}


@frozen
class Tags:
    """The tags found, in order (first occurrence of a key wins), and what was left out."""

    pairs: tuple[tuple[str, str], ...] = ()
    format: str | None = None  # sqlcommenter | marginalia (the first tag comment's)
    dropped: int = 0  # tags over MAX_TAGS
    truncated: bool = False  # the statement was longer than MAX_INPUT

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def get(self, key: str) -> str | None:
        for k, v in self.pairs:
            if k == key:
                return v
        return None

    def named(self, meaning: str) -> str | None:
        """The value of the first key meaning `meaning` (ALIASES), non-empty."""
        for key in ALIASES[meaning]:
            v = self.get(key)
            if v:
                return v
        return None

    def where(self) -> str | None:
        """The code location: 'orders#create', 'job SendInvoiceJob', a route."""
        job, controller, action = self.named("job"), self.named("controller"), self.named("action")
        route = self.named("route")
        if job:
            return f"job {job}"
        if controller and action:
            return f"{controller}#{action}"
        if controller:
            return controller + (f" {route}" if route and route != controller else "")
        if route:
            return f"route {route}" + (f" ({action})" if action else "")
        return f"action {action}" if action else None

    def phrase(self) -> str | None:
        """'Shop orders#create', 'Shop, job SendInvoiceJob', or what of it is tagged."""
        return join_phrase(self.named("application"), self.where())

    def to_json(self) -> dict[str, object]:
        """What a deadlock participant's statement says (evidence.origin, tags only)."""
        found: dict[str, object] = {
            "application": self.named("application"),
            **{m: self.named(m) for m in ("controller", "action", "route", "job", "framework")},
            "tags": self.others(),
            "source": self.format,
            "phrase": self.phrase(),
        }
        return {k: v for k, v in found.items() if v}  # only the keys found (SPEC §6)

    def others(self) -> dict[str, str]:
        """Tags that are none of the well-known keys (traceparent, db_driver, line …)."""
        known = {k for keys in ALIASES.values() for k in keys}
        return {k: v for k, v in self.pairs if k not in known}


def join_phrase(app: str | None, where: str | None) -> str | None:
    if app and where:
        return f"{app}, {where}" if where.startswith("job ") else f"{app} {where}"
    return where or app


def parse_tags(statement: str | None) -> Tags:
    """Every tag comment of one statement (bounded, linear). A comment counts as tags only
    when all of it parses as key/value pairs: prose comments are not tags."""
    if not statement:
        return Tags()
    text = statement[:MAX_INPUT]
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    fmt: str | None = None
    dropped = 0
    for body in _comments(text):
        found = _pairs(body)
        if found is None:
            continue
        kind, items = found
        fmt = fmt or kind
        for key, value in items:
            if key in seen:
                continue
            if len(pairs) >= MAX_TAGS:
                dropped += 1
                continue
            seen.add(key)
            pairs.append((key, value))
    return Tags(tuple(pairs), fmt, dropped, len(statement) > MAX_INPUT)


def _comments(text: str) -> list[str]:
    """Bodies of the block comments outside quotes, at most MAX_COMMENTS; MySQL's
    executable comments (`/*!`) and optimizer hints (`/*+`) are code, not tags."""
    out: list[str] = []
    pos, n = 0, len(text)
    while pos < n and len(out) < MAX_COMMENTS:
        m = _TOKEN.search(text, pos)
        if m is None:
            break
        tok, start = m.group(), m.start()
        if tok in ("'", '"', "`"):
            pos = _after_quote(text, start + 1, tok)
        elif tok == "--":
            eol = text.find("\n", start)
            pos = n if eol < 0 else eol + 1
        else:
            end = text.find("*/", start + 2)
            if end < 0:
                break  # never closed (a statement cut short): a partial comment says nothing
            body = text[start + 2 : end]
            if body[:1] not in ("!", "+"):
                out.append(body[:MAX_BODY])
            pos = end + 2
    return out


def without_comments(statement: str, limit: int = MAX_INPUT) -> str:
    """The statement's first `limit` characters without its block comments (the tags), for
    a short quote of it; quotes are kept whole."""
    text = statement[:limit]
    out: list[str] = []
    pos, n = 0, len(text)
    while pos < n:
        m = _TOKEN.search(text, pos)
        if m is None:
            break
        tok, start = m.group(), m.start()
        if tok == "/*":
            out.append(text[pos:start])
            end = text.find("*/", start + 2)
            pos = n if end < 0 else end + 2
            out.append(" ")
            continue
        stop = _after_quote(text, start + 1, tok) if tok in ("'", '"', "`") else start + 2
        out.append(text[pos:stop])
        pos = stop
    out.append(text[pos:])
    return "".join(out)


def _after_quote(text: str, pos: int, quote: str) -> int:
    """The position after the quote closing the literal opened before `pos` (a doubled
    quote or a backslash-escaped one does not close it); the end when none does."""
    n = len(text)
    while pos < n:
        q = text.find(quote, pos)
        if q < 0:
            return n
        back = 0
        while q - back - 1 >= pos and text[q - back - 1] == "\\":
            back += 1
        if back % 2:
            pos = q + 1  # \' escaped (MySQL)
            continue
        if text.startswith(quote, q + 1):
            pos = q + 2  # '' doubled
            continue
        return q + 1
    return n


def _pairs(body: str) -> tuple[str, list[tuple[str, str]]] | None:
    """(format, pairs) of a comment made only of key=value / key:value pairs; else None."""
    items: list[tuple[str, str]] = []
    kinds: set[str] = set()
    i, n = 0, len(body)
    while i < n:
        while i < n and body[i] in " \t\r\n":
            i += 1
        if i >= n:
            break
        k0 = i
        while i < n and body[i] in _KEY_CHARS:
            i += 1
        raw_key = body[k0:i]
        if not raw_key or len(raw_key) > MAX_KEY or i >= n or body[i] not in "=:":
            return None
        sep = body[i]
        i += 1
        if i < n and body[i] == "'":
            value, i = _quoted(body, i + 1)
            if value is None:
                return None
            quoted = True
        else:
            comma = body.find(",", i)
            stop = n if comma < 0 else comma
            value, i = body[i:stop].strip(), stop
            quoted = False
        while i < n and body[i] in " \t\r\n":
            i += 1
        if i < n:
            if body[i] != ",":
                return None
            i += 1
        encoded = sep == "=" and quoted  # sqlcommenter: key and value url-encoded
        kinds.add("sqlcommenter" if encoded else "marginalia")
        key = (unquote(raw_key) if encoded else raw_key).lower()
        items.append((clean(key, MAX_KEY), _shown(key, unquote(value) if encoded else value)))
    if not items:
        return None
    return ("sqlcommenter" if kinds == {"sqlcommenter"} else "marginalia"), items


def _quoted(body: str, i: int) -> tuple[str | None, int]:
    """A '…' value with \\' escapes (sqlcommenter's meta-character escaping)."""
    out: list[str] = []
    n = len(body)
    while i < n:
        q = body.find("'", i)
        if q < 0:
            return None, n
        if q > i and body[q - 1] == "\\":
            out.append(body[i : q - 1] + "'")
            i = q + 1
            continue
        out.append(body[i:q])
        return "".join(out), q + 1
    return None, n


def clean(text: str, limit: int = MAX_VALUE) -> str:
    """Text safe to show: control and format characters (bidi overrides included) removed,
    whitespace runs made single spaces, cut to `limit` characters (… marks a cut)."""
    kept = "".join(
        " " if ch in "\t\r\n" else ch
        for ch in text[: limit * 4]
        if ch in "\t\r\n" or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co")
    )
    kept = " ".join(kept.split())
    return kept if len(kept) <= limit else kept[: limit - 1] + "…"


def _shown(key: str, value: str) -> str:
    """The value as shown: a credential's is masked, known passwords scrubbed, cleaned."""
    if any(s in key for s in _SECRET_KEYS):
        return MASK
    low = value.lower()
    if low.startswith(("bearer ", "basic ")) or _looks_like_jwt(value):
        return MASK
    return clean(scrub(value[: MAX_VALUE * 4]))


def _looks_like_jwt(value: str) -> bool:
    parts = value.split(".")
    return len(parts) == 3 and value.startswith("eyJ") and all(len(p) >= 8 for p in parts[:2])
