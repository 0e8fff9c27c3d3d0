"""Composing queue queries: catalog names quoted by the driver's own rules into a template's
{placeholders} in ONE pass, fixed fragments beside them (shared by queue.py and
queue_generic.py)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when a PostgreSQL query is composed (a MySQL audit never does)
    from psycopg import sql as pgsql

from ..targets.quoting import my_ident_for_format, pg_ident_text

_PLACEHOLDER = re.compile(r"\{([a-z_]{1,40})\}")


def compose(
    engine: str, template: str, idents: dict[str, tuple[str, ...]], frags: dict[str, str]
) -> str:
    """The template with each {placeholder} replaced in ONE pass: catalog names quoted by the
    driver's own rules (psycopg.sql.Identifier / backticks, % doubled for the paramstyle),
    fixed fragments from this module. Inserted text is never scanned again, so a name holding
    '{tasks}', quotes or comment marks stays inside its quotes."""
    if engine == "postgresql":
        from psycopg import sql as pgsql
    parts: list[pgsql.Composable] = []
    out: list[str] = []
    pos = 0
    for m in _PLACEHOLDER.finditer(template):
        key = m.group(1)
        if key not in idents and key not in frags:
            continue  # not ours (a regex quantifier, JSON in a comment): left as text
        chunk = template[pos : m.start()]
        pos = m.end()
        if engine == "postgresql":
            parts.append(pgsql.SQL(chunk))
            if key in idents:
                parts.append(pgsql.Identifier(*(p.replace("%", "%%") for p in idents[key])))
            else:
                parts.append(pgsql.SQL(frags[key]))
        else:
            out.append(chunk)
            out.append(my_ident_for_format(*idents[key]) if key in idents else frags[key])
    if engine == "postgresql":
        parts.append(pgsql.SQL(template[pos:]))
        return pgsql.Composed(parts).as_string(None)
    out.append(template[pos:])
    return "".join(out)


def qualified(engine: str, schema: str, table: str) -> str:
    """schema.table quoted for people (fixes, messages), the same rules as the queries."""
    if engine == "postgresql":
        return pg_ident_text(schema, table)
    return my_ident_for_format(schema, table).replace("%%", "%")
