"""What every target module shares, below the drivers' modules (postgres.py, mysql.py) and the
package that opens them: TargetSpec, the Connection protocol, the timeouts, scrub()."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import field, replace
from functools import cached_property
from typing import Protocol

from ..errors import TargetError
from ..frozen import frozen
from .secrets import register_secret
from .secrets import scrub as scrub_text
from .urls import parse_url, redact_url
from .version import ServerVersion

PG_SCHEMES = ("postgresql", "postgres")
MY_SCHEMES = ("mysql", "mariadb")
DEFAULT_MYSQL_URL = "mysql://root@127.0.0.1:3306"
DEFAULT_PG_URL = "postgresql://"

# Probe sessions must never hurt the server: these bound every statement dbwatch runs.
STATEMENT_TIMEOUT_MS = 5000
LOCK_TIMEOUT_MS = 1000
CONNECT_TIMEOUT_S = 5
IO_TIMEOUT_S = 5  # MySQL/MariaDB client read and write timeouts (PyMySQL)
APP_NAME = "dbwatch"


@frozen
class TargetSpec:
    name: str
    url: str = field(repr=False)  # may hold a password: never shown (redact_url)
    engine: str  # "postgresql" or "mysql" (flavour refined after connecting)
    retry_after: float | None = None  # queue tables: the target's Laravel retry_after
    # Scope (SPEC §3): a URL naming a database scopes per-database rules to it, unless widened.
    all_databases: bool = False
    password_file: str | None = None  # overrides the URL's password; read at each connect

    @cached_property
    def database(self) -> str | None:
        """The database (PostgreSQL) or schema (MySQL) the URL names, None when it names none
        (parsed once per spec: a cycle asked three times)."""
        try:
            return parse_url(self.url).database
        except TargetError:
            return None

    @property
    def scoped_database(self) -> str | None:
        """The database everything per-database is scoped to; None means every database."""
        return None if self.all_databases else self.database


def engine_of(url: str) -> str:
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme in PG_SCHEMES:
        return "postgresql"
    if scheme in MY_SCHEMES:
        return "mysql"
    raise TargetError(
        redact_url(url), f"unknown URL scheme {scheme!r}: use postgresql:// or mysql://"
    )


def spec_for(
    url: str,
    name: str | None = None,
    *,
    retry_after: float | None = None,
    all_databases: bool = False,
    password_file: str | None = None,
) -> TargetSpec:
    """THE target-spec builder (audit, watch, terminate, deadlocks, peers): validates the URL
    (scheme, port, brackets) and registers its password with the scrubber."""
    engine = engine_of(url)
    if url != DEFAULT_PG_URL:
        parsed = parse_url(url)
        public = (redact_url(url), name)
        register_secret(parsed.password, public)
        register_secret(parsed.query.get("password"), public)
    return TargetSpec(
        name=name if name is not None else default_name(url),
        url=url,
        engine=engine,
        retry_after=retry_after,
        all_databases=all_databases,
        password_file=password_file,
    )


class TargetSettings(Protocol):
    """What a configured [[targets]] entry (config.TargetConfig) says of its connection."""

    @property
    def name(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def retry_after(self) -> float | None: ...
    @property
    def all_databases(self) -> bool: ...
    @property
    def password_file(self) -> str | None: ...


def spec_from_config(target: TargetSettings) -> TargetSpec:
    """The spec of a configured [[targets]] entry, with every per-target setting."""
    return spec_for(
        target.url,
        target.name,
        retry_after=target.retry_after,
        all_databases=bool(target.all_databases),
        password_file=target.password_file,
    )


def with_password_file(spec: TargetSpec, path: str | None) -> TargetSpec:
    """--password-file on the command line: applies to every target it names."""
    return spec if not path else replace(spec, password_file=path)


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


def url_parts(url: str) -> tuple[dict[str, object], dict[str, str]]:
    """host/port/user/password/database plus query parameters, all unquoted."""
    p = parse_url(url)
    base: dict[str, object] = {
        "host": p.host,
        "port": p.port,
        "user": p.user,
        "password": p.password,
        "database": p.database,
    }
    return base, p.query


def password_of(spec: TargetSpec) -> str | None:
    """The password to use: the password file's first line, else the URL's (None: none)."""
    if spec.password_file:
        try:
            with open(os.path.expanduser(spec.password_file), encoding="utf-8") as fh:
                secret = fh.readline().rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or "not readable as UTF-8 text"
            raise TargetError(spec.name, f"password file {spec.password_file}: {why}") from None
        register_secret(secret, (redact_url(spec.url), spec.name))
        return secret
    if spec.url == DEFAULT_PG_URL:
        return None
    return parse_url(spec.url).password


# What a statement is bound with (%(name)s or %s placeholders) and what a row comes back as:
# column name -> value, narrowed by the snapshot builders (snapshot.values), never Any.
Params = Mapping[str, object] | Sequence[object] | None
DriverRow = dict[str, object]


class Connection(Protocol):
    engine: str
    flavour: str
    server_version: str
    version_num: int  # the flavour's own number: compare only within one flavour
    version: ServerVersion
    spec: TargetSpec
    server_key: str  # which server, for dbwatch's own connection ids (targets.own)

    def rows(
        self, sql: str, params: Params = None, limit: int | None = None
    ) -> list[DriverRow]: ...
    def execute(self, sql: str, params: Params = None) -> int: ...
    def close(self) -> None: ...


# The daemon's cycle deadline (dbwatch.daemon.runner): told of every connection opened in
# this context -- the cycle's thread -- so it can shut them down when the cycle hangs.
ON_OPEN: ContextVar[Callable[[Connection], None] | None] = ContextVar("on_open", default=None)


def in_use(conn: Connection) -> None:
    """Tell the daemon's deadline (ON_OPEN) that this context now uses `conn`."""
    hook = ON_OPEN.get()
    if hook is not None:
        hook(conn)


def scrub(message: object, spec: TargetSpec | None = None) -> str:
    """A driver or error message made safe to show, log, store or send: one line, bounded,
    without any registered password (or fragment of one) — see targets.secrets."""
    extra: list[str | None] = []
    if spec is not None and spec.url != DEFAULT_PG_URL:
        try:
            extra.append(parse_url(spec.url).password)
        except TargetError:
            pass
    text = " ".join(str(message).split())
    return scrub_text(text, extra)[:300]
