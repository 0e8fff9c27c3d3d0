"""Composing queue queries: catalog names quoted by the driver's own rules into a template's
{placeholders} in ONE pass, fixed fragments beside them (shared by queue.py and
queue_generic.py)."""

from __future__ import annotations

import re

from ..targets.quoting import my_ident_for_format, pg_ident_for_format, pg_ident_text

_PLACEHOLDER = re.compile(r"\{([a-z_]{1,40})\}")


def compose(
    engine: str, template: str, idents: dict[str, tuple[str, ...]], frags: dict[str, str]
) -> str:
    """The template with each {placeholder} replaced in ONE pass: catalog names quoted by the
    driver's own rules (targets.quoting: psycopg's Identifier / backticks, % doubled for the
    paramstyle), fixed fragments from this module. Inserted text is never scanned again, so a name holding
    '{tasks}', quotes or comment marks stays inside its quotes."""
    quote = pg_ident_for_format if engine == "postgresql" else my_ident_for_format
    out: list[str] = []
    pos = 0
    for m in _PLACEHOLDER.finditer(template):
        key = m.group(1)
        if key not in idents and key not in frags:
            continue  # not ours (a regex quantifier, JSON in a comment): left as text
        out.append(template[pos : m.start()])
        pos = m.end()
        out.append(quote(*idents[key]) if key in idents else frags[key])
    out.append(template[pos:])
    return "".join(out)


def qualified(engine: str, schema: str, table: str) -> str:
    """schema.table quoted for people (fixes, messages), the same rules as the queries."""
    if engine == "postgresql":
        return pg_ident_text(schema, table)
    return my_ident_for_format(schema, table).replace("%%", "%")
