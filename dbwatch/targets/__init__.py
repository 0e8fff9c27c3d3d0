"""Targets: the only code that talks to a database driver. URL parsing, opening, redaction."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

from ..errors import TargetError
from .version import ServerVersion

PG_SCHEMES = ("postgresql", "postgres")
MY_SCHEMES = ("mysql", "mariadb")
DEFAULT_MYSQL_URL = "mysql://root@127.0.0.1:3306"
DEFAULT_PG_URL = "postgresql://"

# Probe sessions must never hurt the server: these bound every statement dbwatch runs.
STATEMENT_TIMEOUT_MS = 5000
LOCK_TIMEOUT_MS = 1000
CONNECT_TIMEOUT_S = 5
APP_NAME = "dbwatch"


@dataclass(frozen=True)
class TargetSpec:
    name: str
    url: str
    engine: str  # "postgresql" or "mysql" (flavour refined after connecting)
    retry_after: float | None = None  # queue tables: the target's Laravel retry_after
    # Scope (SPEC §3): a URL naming a database scopes per-database rules to it, unless widened.
    all_databases: bool = False

    @property
    def database(self) -> str | None:
        """The database (PostgreSQL) or schema (MySQL) the URL names, None when it names none."""
        try:
            db = url_parts(self.url)[0]["database"]
        except ValueError:
            return None
        return str(db) if db else None

    @property
    def scoped_database(self) -> str | None:
        """The database everything per-database is scoped to; None means every database."""
        return None if self.all_databases else self.database

    @property
    def safe_url(self) -> str:
        return redact_url(self.url)


def redact_url(url: str) -> str:
    """The URL with its password replaced by ***, for messages and JSON."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable url>"
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if _port(parts) else ""
    netloc = f"{user}:***@{host}{port}"
    return parts._replace(netloc=netloc).geturl()


def _port(parts: Any) -> int | None:
    try:
        return int(parts.port) if parts.port else None
    except ValueError:
        return None


def engine_of(url: str) -> str:
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme in PG_SCHEMES:
        return "postgresql"
    if scheme in MY_SCHEMES:
        return "mysql"
    raise TargetError(
        redact_url(url), f"unknown URL scheme {scheme!r}: use postgresql:// or mysql://"
    )


def spec_for(url: str, name: str | None = None) -> TargetSpec:
    engine = engine_of(url)
    if name is None:
        name = default_name(url)
    return TargetSpec(name=name, url=url, engine=engine)


def default_name(url: str) -> str:
    """A readable, password-free name: engine://user@host:port/db."""
    return redact_url(url).replace(":***@", "@")


def default_targets() -> list[TargetSpec]:
    """DBWATCH_TARGETS (space separated), else the local defaults."""
    env = os.environ.get("DBWATCH_TARGETS", "").split()
    urls = env or [DEFAULT_PG_URL, DEFAULT_MYSQL_URL]
    out = []
    for u in urls:
        if u == DEFAULT_PG_URL:
            out.append(TargetSpec(name="postgresql (libpq defaults)", url=u, engine="postgresql"))
        else:
            out.append(spec_for(u))
    return out


def url_parts(url: str) -> tuple[dict[str, Any], dict[str, str]]:
    """host/port/user/password/database plus query parameters, all unquoted."""
    parts = urlsplit(url)
    base = {
        "host": parts.hostname,
        "port": _port(parts),
        "user": unquote(parts.username) if parts.username else None,
        "password": unquote(parts.password) if parts.password is not None else None,
        "database": unquote(parts.path.lstrip("/")) or None,
    }
    return base, dict(parse_qsl(parts.query))


class Connection(Protocol):
    engine: str
    flavour: str
    server_version: str
    version_num: int  # the flavour's own number: compare only within one flavour
    version: ServerVersion
    spec: TargetSpec

    def rows(
        self, sql: str, params: Any = None, limit: int | None = None
    ) -> list[dict[str, Any]]: ...
    def execute(self, sql: str, params: Any = None) -> int: ...
    def close(self) -> None: ...


def open_target(spec: TargetSpec, database: str | None = None) -> Connection:
    """A labelled, read-only, autocommit session with short timeouts."""
    if spec.engine == "postgresql":
        from .postgres import PgConnection

        return PgConnection.open(spec, database)
    from .mysql import MyConnection

    return MyConnection.open(spec, database)


def scrub(message: str, spec: TargetSpec) -> str:
    """Remove the password from a driver message, whatever the driver put in it."""
    try:
        _, _ = url_parts(spec.url)
        pw = urlsplit(spec.url).password
    except ValueError:
        pw = None
    text = " ".join(str(message).split())
    if pw:
        text = text.replace(pw, "***").replace(unquote(pw), "***")
    return text[:300]
