"""Targets: the only code that talks to a database driver. URL parsing, opening, redaction.

open_target picks a driver's module (postgres.py, mysql.py); what they share lives in base.py,
below them, and is re-exported here."""

from __future__ import annotations

from .base import (
    APP_NAME,
    CONNECT_TIMEOUT_S,
    DEFAULT_MYSQL_URL,
    DEFAULT_PG_URL,
    IO_TIMEOUT_S,
    LOCK_TIMEOUT_MS,
    MY_SCHEMES,
    ON_OPEN,
    PG_SCHEMES,
    STATEMENT_TIMEOUT_MS,
    Connection,
    DriverRow,
    Params,
    TargetSettings,
    TargetSpec,
    default_name,
    default_targets,
    engine_of,
    in_use,
    password_of,
    scrub,
    spec_for,
    spec_from_config,
    url_parts,
    with_password_file,
)
from .secrets import scrub as scrub_text
from .urls import parse_url, redact_url

__all__ = [
    "APP_NAME",
    "CONNECT_TIMEOUT_S",
    "DEFAULT_MYSQL_URL",
    "DEFAULT_PG_URL",
    "IO_TIMEOUT_S",
    "LOCK_TIMEOUT_MS",
    "MY_SCHEMES",
    "ON_OPEN",
    "PG_SCHEMES",
    "STATEMENT_TIMEOUT_MS",
    "Connection",
    "DriverRow",
    "Params",
    "TargetSettings",
    "TargetSpec",
    "default_name",
    "default_targets",
    "engine_of",
    "in_use",
    "load_driver",
    "open_target",
    "parse_url",
    "password_of",
    "redact_url",
    "scrub",
    "scrub_text",
    "spec_for",
    "spec_from_config",
    "url_parts",
    "with_password_file",
]


def load_driver(engine: str) -> None:
    """Import the module (and driver) open_target uses for `engine`, so that a session can be
    opened on another thread without importing anything there."""
    if engine == "postgresql":
        from . import postgres  # noqa: F401
    else:
        import codecs

        from . import mysql  # noqa: F401

        # PyMySQL connects through socket.create_connection, whose getaddrinfo encodes the
        # host name with the idna codec: its module is imported on the codec's first use
        codecs.lookup("idna")


def open_target(spec: TargetSpec, database: str | None = None) -> Connection:
    """A labelled, read-only, autocommit session with short timeouts."""
    conn: Connection
    if spec.engine == "postgresql":
        from .postgres import PgConnection

        pg = PgConnection.open(spec, database)
        in_use(pg)
        pg.set_timeouts()
        return pg
    from .mysql import MyConnection

    conn = MyConnection.open(spec, database)
    in_use(conn)
    return conn
