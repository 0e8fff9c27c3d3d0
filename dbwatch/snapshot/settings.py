"""Typed rows of the settings snapshot sections (see sections.py): the server's safety
settings (PG501, MY501) and what the monitoring account may see (DW001, exact GRANTs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .sections import rows_of, section
from .values import JSON, Row, as_row, as_rows, opt_str, str_list, to_bool, to_str


@dataclass(frozen=True)
class PgSetting:
    """One row of settings.sql: a server-wide value or a per-role / per-database override."""

    name: str
    setting: str | None = None
    scope: str = "server"  # server | override
    role: str | None = None  # override: ALTER ROLE … SET (None: every role)
    database: str | None = None  # override: ALTER DATABASE … SET (None: every database)
    unit: str | None = None

    @classmethod
    def from_row(cls, row: Row) -> PgSetting:
        g = row.get
        return cls(
            name=to_str(g("name")),
            setting=opt_str(g("setting")),
            scope=to_str(g("scope"), "server"),
            role=opt_str(g("role")),
            database=opt_str(g("database")),
            unit=opt_str(g("unit")),
        )


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class MyPrivileges:
    """What the MySQL/MariaDB account may do, from SHOW GRANTS (my.privileges)."""

    account: str = ""  # 'user'@'host', ready for a GRANT statement
    process: bool = False
    select: bool = False  # SELECT on the scoped schema (or on every schema)
    schema: str | None = None
    roles: tuple[str, ...] = ()

    @classmethod
    def build(cls, data: object) -> MyPrivileges:
        if isinstance(data, MyPrivileges):
            return data
        g = as_row(data).get
        return cls(
            account=to_str(g("account")),
            process=to_bool(g("process")),
            select=to_bool(g("select")),
            schema=opt_str(g("schema")),
            roles=str_list(g("roles")),
        )


@dataclass(frozen=True)
class PgUnreadableTable:
    """A queue table the role cannot read: no USAGE on its schema or no SELECT on it."""

    schema: str
    table: str
    schema_usage: bool = False
    table_select: bool = False

    @classmethod
    def from_row(cls, row: Row) -> PgUnreadableTable:
        g = row.get
        return cls(
            schema=to_str(g("schema")),
            table=to_str(g("table")),
            schema_usage=to_bool(g("schema_usage")),
            table_select=to_bool(g("table_select")),
        )


@dataclass(frozen=True)
class PgPrivileges:
    """What the PostgreSQL role may see (pg.privileges)."""

    user: str = ""
    sees_all_sessions: bool = False
    unreadable_tables: tuple[PgUnreadableTable, ...] = ()

    @classmethod
    def build(cls, data: object) -> PgPrivileges:
        if isinstance(data, PgPrivileges):
            return data
        g = as_row(data).get
        return cls(
            user=to_str(g("user")),
            sees_all_sessions=to_bool(g("sees_all_sessions")),
            unreadable_tables=tuple(
                PgUnreadableTable.from_row(r) for r in as_rows(g("unreadable_tables"))
            ),
        )


PG_SETTINGS = section("pg.settings", rows_of(PgSetting))
MY_SETTINGS = section("my.settings", MySettings.build)
PG_PRIVILEGES = section("pg.privileges", PgPrivileges.build)
MY_PRIVILEGES = section("my.privileges", MyPrivileges.build)
