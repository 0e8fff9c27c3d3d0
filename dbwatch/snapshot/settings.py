"""Typed rows of the settings snapshot sections (see sections.py): the server's safety
settings (PG501, MY501) and what the monitoring account may see (DW001, exact GRANTs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from ..frozen import frozen
from .sections import one_of, rows_of, section
from .values import JSON, Read, TypedRow, as_row, built, opt_str, to_str


@frozen
class PgSetting(TypedRow, scope=Read(convert=lambda v: to_str(v, "server"))):
    """One row of settings.sql: a server-wide value or a per-role / per-database override."""

    name: str
    setting: str | None = None
    scope: str = "server"  # server | override
    role: str | None = None  # override: ALTER ROLE … SET (None: every role)
    database: str | None = None  # override: ALTER DATABASE … SET (None: every database)
    unit: str | None = None


@frozen
class MySettings:
    """Global variables of MySQL/MariaDB by lower-case name (MY501); a variable the server
    does not have is absent, which is not the same as one set to an empty value."""

    values: Mapping[str, str | None] = field(default_factory=dict)

    def get(self, name: str, default: str | None = None) -> str | None:
        return self.values.get(name, default)

    def to_json(self) -> JSON:
        return dict(self.values)

    @classmethod
    def build(cls, data: object) -> MySettings:
        if isinstance(data, MySettings):
            return data
        return cls({name: opt_str(v) for name, v in as_row(data).items()})


@frozen
class MyPrivileges(TypedRow):
    """What the MySQL/MariaDB account may do, from SHOW GRANTS (my.privileges)."""

    account: str = ""  # 'user'@'host', ready for a GRANT statement
    process: bool = False
    select: bool = False  # SELECT on the scoped schema (or on every schema)
    schema: str | None = None
    roles: tuple[str, ...] = ()


@frozen
class PgUnreadableTable(TypedRow):
    """A queue table the role cannot read: no USAGE on its schema or no SELECT on it."""

    schema: str
    table: str
    schema_usage: bool = False
    table_select: bool = False


@frozen
class PgPrivileges(TypedRow, unreadable_tables=Read(convert=built(PgUnreadableTable))):
    """What the PostgreSQL role may see (pg.privileges)."""

    user: str = ""
    sees_all_sessions: bool = False
    unreadable_tables: tuple[PgUnreadableTable, ...] = ()


PG_SETTINGS = section("pg.settings", rows_of(PgSetting))
MY_SETTINGS = section("my.settings", MySettings.build)
PG_PRIVILEGES = section("pg.privileges", one_of(PgPrivileges))
MY_PRIVILEGES = section("my.privileges", one_of(MyPrivileges))
