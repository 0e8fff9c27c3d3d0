"""Target URLs: one parser for both engines that accepts a password with any character.

The rule (README "Passwords"): everything between `scheme://` and the LAST `@` is the user
info; the user ends at its first `:`, the rest is the password, taken literally except that
`%XX` sequences are decoded (so the RFC-encoded form works too; write a literal `%41` as
`%2541`). An `@` in the database name or a parameter must be written `%40`. A port must be a
number from 1 to 65535. Errors never show the password: they carry the redacted URL.
"""

from __future__ import annotations

import re
from dataclasses import field
from urllib.parse import parse_qsl, quote, unquote

from ..errors import TargetError
from ..frozen import frozen


@frozen
class ParsedUrl:
    scheme: str
    user: str | None
    password: str | None = field(repr=False)
    host: str | None  # None: the driver's default (libpq: socket; MySQL: ~/.my.cnf or 127.0.0.1)
    port: int | None
    database: str | None
    query: dict[str, str]
    rest: str  # everything after the user info, as written (host, path, parameters)

    def without_password(self) -> str:
        """The URL as a driver may parse it: user percent-encoded, no password."""
        user = f"{quote(self.user, safe='')}@" if self.user else ""
        return f"{self.scheme}://{user}{self.rest}"


_QUERY_PASSWORD = re.compile(r"([?&]password=)[^&]*", re.IGNORECASE)


def redact_url(url: str) -> str:
    """The URL with its password (user info or ?password=) replaced by ***; works on any
    string, parseable or not."""
    text = str(url)
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    if "@" in rest:
        userinfo, _, after = rest.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        rest = f"{user}{':***' if colon else ''}@{after}"
    rest = _QUERY_PASSWORD.sub(r"\1***", rest)
    return f"{scheme}://{rest}" if sep else rest


def _fail(url: str, message: str) -> TargetError:
    return TargetError(redact_url(url), message)


def parse_port(url: str, text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 65535:
        shown = text if len(text) <= 20 else text[:20] + "…"
        raise _fail(url, f"port {shown!r} is not a number from 1 to 65535")
    return int(text)


def _host_port(url: str, hostport: str) -> tuple[str | None, int | None]:
    if not hostport:
        return None, None
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise _fail(url, "unbalanced '[' in the host (an IPv6 address is written [::1])")
        host, tail = hostport[1:end], hostport[end + 1 :]
        if tail and not tail.startswith(":"):
            raise _fail(url, f"unexpected {tail[:20]!r} after the IPv6 address")
        return host, parse_port(url, tail[1:]) if tail else None
    if "," in hostport:  # libpq's multi-host form: validate each port, leave the list to libpq
        for item in hostport.split(","):
            _host_port(url, item)
        return hostport, None
    if "]" in hostport:
        raise _fail(url, "unbalanced ']' in the host")
    host, colon, port = hostport.rpartition(":")
    if not colon:
        return unquote(hostport), None
    return unquote(host) or None, parse_port(url, port)


def parse_url(url: str) -> ParsedUrl:
    """Parse a target URL; a TargetError (naming the redacted URL) for anything malformed."""
    scheme, sep, rest = str(url).partition("://")
    if not sep or not scheme:
        raise _fail(url, "not a URL: expected postgresql://… or mysql://…")
    user = password = None
    if "@" in rest:
        userinfo, _, rest = rest.rpartition("@")
        raw_user, colon, raw_pw = userinfo.partition(":")
        user = unquote(raw_user) or None
        password = unquote(raw_pw) if colon else None
    if "#" in rest:
        raise _fail(url, "a '#' after the host: write it as %23 (in a password it is fine)")
    head, qmark, query = rest.partition("?")
    hostport, slash, path = head.partition("/")
    host, port = _host_port(url, hostport)
    try:
        params = dict(parse_qsl(query, keep_blank_values=True)) if qmark else {}
    except ValueError as exc:
        raise _fail(url, f"bad parameters: {exc}") from None
    if "port" in params:
        for item in params["port"].split(","):
            parse_port(url, item)
    return ParsedUrl(
        scheme=scheme.lower(),
        user=user,
        password=password,
        host=host,
        port=port,
        database=(unquote(path) or None) if slash else None,
        query=params,
        rest=rest,
    )
