"""Identifier quoting, one helper per engine: catalog names are data, never SQL text.

Compose SQL with these at the last step; never apply a string template to a quoted name.
The text quoters (my_ident, pg_ident_text) need no driver: psycopg is imported by the
helpers that compose with it, so a reader of fixes (queues/laravel.py) loads no driver.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from psycopg import sql


def pg_ident(*parts: str) -> sql.Composable:
    """A (possibly qualified) PostgreSQL identifier composed by psycopg itself."""
    from psycopg import sql

    return sql.Identifier(*parts)


def pg_compose(template: str, **idents: sql.Composable) -> str:
    """An SQL text with `{name}` placeholders filled by composed identifiers, as text the
    driver runs (psycopg's own composition: a name is never template text)."""
    from psycopg import sql

    return sql.SQL(template).format(**idents).as_string(None)


def pg_ident_for_format(*parts: str) -> str:
    """pg_ident as the text the driver runs, with % doubled, for statements that also carry
    %s parameters (psycopg's own quoting of the name)."""
    from psycopg import sql

    return sql.Identifier(*(p.replace("%", "%%") for p in parts)).as_string(None)


def pg_ident_text(*parts: str) -> str:
    """The same identifier as text, for fixes shown to people (standard double-quote rules)."""
    return ".".join('"' + p.replace('"', '""') + '"' for p in parts)


def pg_text_array(values: Iterable[str]) -> str:
    """A PostgreSQL array literal of `values` ('{"a","b"}'), bound as one text parameter and
    cast by the query (`%(x)s::text[]`): psycopg dumps a Python list element by element, each
    checked for quoting (a 200-name list cost 0.6 ms of CPU per statement). Every element is
    double-quoted, backslashes and double quotes escaped (array_in's rules)."""
    return (
        "{"
        + ",".join('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)
        + "}"
    )


def my_ident(*parts: str) -> str:
    """A (possibly qualified) MySQL/MariaDB identifier: backticks, inner backticks doubled.

    The result may be placed in statement text; callers that use the driver's %s
    paramstyle must double '%' (see my_ident_for_format)."""
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def my_ident_for_format(*parts: str) -> str:
    """my_ident with % doubled, for statements that also carry %s parameters (PyMySQL)."""
    return my_ident(*parts).replace("%", "%%")
