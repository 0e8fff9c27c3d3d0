"""What the monitoring user may see, read from the privilege system (SHOW GRANTS, pg_has_role,
has_table_privilege) rather than guessed from empty results: a missing grant is DW001 with the
exact GRANT for this account; schemas it cannot read in an unscoped audit are DW002 gaps.
"""

from __future__ import annotations

import re
from dataclasses import field
from functools import partial

from ..frozen import mutable
from ..queues import MARKER_COLUMNS
from ..snapshot import CoverageGap
from ..snapshot.settings import (
    MyPrivileges,
    PgPrivileges,
    PgUnreadableTable,
)
from ..snapshot.values import Row, as_row, to_bool, to_str
from ..targets import Connection
from ..targets.quoting import my_ident, pg_ident_text, pg_text_array
from .registry import probe
from .results import Covered, PartialResult
from .share import per_server
from .sqlfiles import sql

PG_LIMIT = 50
_GRANT = re.compile(
    r"^GRANT\s+(?P<privs>.+?)\s+ON\s+(?P<obj>.+?)\s+TO\s+", re.IGNORECASE | re.DOTALL
)
_ROLE = re.compile(r"^GRANT\s+(?P<roles>.+?)\s+TO\s+", re.IGNORECASE | re.DOTALL)


@mutable
class Grants:
    """SHOW GRANTS, parsed: privileges per object ("*.*", "app.*", "app.jobs")."""

    on: dict[str, set[str]] = field(default_factory=dict)
    roles: list[str] = field(default_factory=list)

    def privileges(self, obj: str) -> set[str]:
        return self.on.get(obj, set())


def _split_privs(text: str) -> set[str]:
    """'SELECT, INSERT, SELECT (a, b)' -> {'SELECT', 'INSERT'}; column grants are not table ones."""
    text = re.sub(r"\([^)]*\)", "#COLUMNS", text)
    out = set()
    for p in text.split(","):
        p = " ".join(p.split()).upper()
        if p and "#COLUMNS" not in p:
            out.add("ALL" if p.startswith("ALL") else p)
    return out


def _unquote(part: str) -> str:
    part = part.strip()
    if len(part) >= 2 and part[0] == part[-1] and part[0] in "`'\"":
        return part[1:-1].replace(part[0] * 2, part[0])
    return part


def parse_grants(lines: list[str]) -> Grants:
    """Lines of SHOW GRANTS (never kept: they may carry a password hash)."""
    g = Grants()
    for line in lines:
        m = _GRANT.match(line)
        if m:
            obj: str = m.group("obj").strip()
            if re.match(r"(PROCEDURE|FUNCTION|PACKAGE)\s", obj, re.IGNORECASE):
                continue
            db, _, table = obj.partition(".")
            key = f"{_unquote(db)}.{_unquote(table)}"
            g.on.setdefault(key, set()).update(_split_privs(m.group("privs")))
            continue
        m = _ROLE.match(line)
        if m and not line.upper().startswith("GRANT PROXY"):
            g.roles += [_unquote(r) for r in m.group("roles").split(",")]
    return g


def _like(pattern: str, name: str) -> bool:
    """A database name in a grant may use the LIKE wildcards % and _ (\\_ and \\% are literal)."""
    rx = ""
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            rx += re.escape(pattern[i + 1])
            i += 2
            continue
        rx += ".*" if ch == "%" else "." if ch == "_" else re.escape(ch)
        i += 1
    return re.fullmatch(rx, name, re.IGNORECASE) is not None


def can_select(g: Grants, schema: str | None) -> bool:
    """SELECT on every table of the schema (None: of every schema)."""
    if g.privileges("*.*") & {"SELECT", "ALL"}:
        return True
    if schema is None:
        return False
    for key, privs in g.on.items():
        db, _, table = key.partition(".")
        if table == "*" and privs & {"SELECT", "ALL"} and _like(db, schema):
            return True
    return False


def selectable_schemas(g: Grants) -> list[str]:
    return sorted(
        k.partition(".")[0] for k, privs in g.on.items() if k != "*.*" and privs & {"SELECT", "ALL"}
    )


def account_literal(account: str) -> str:
    """CURRENT_USER() 'user@host' as 'user'@'host' for a GRANT statement."""
    user, _, host = account.rpartition("@")
    return "'" + user.replace("'", "''") + "'@'" + host.replace("'", "''") + "'"


@probe("my.privileges", "mysql", ttl=60.0)
def my_privileges(conn: Connection) -> MyPrivileges | Covered | PartialResult:
    user_rows = [as_row(r) for r in conn.rows(sql("mysql", "privileges_user", conn.version))]
    account = to_str(user_rows[0].get("account"))
    lines = [
        to_str(next(iter(as_row(r).values()), ""))
        for r in conn.rows(sql("mysql", "privileges_grants", conn.version))
    ]
    g = parse_grants(lines)
    who = account_literal(account)
    scope = conn.spec.scoped_database
    process = bool(g.privileges("*.*") & {"PROCESS", "SUPER", "ALL"})
    select = can_select(g, scope)
    data = MyPrivileges(
        account=who, process=process, select=select, schema=scope, roles=tuple(g.roles)
    )
    # PROCESS is reported by the probes that need it (my.trx, my.innodb_status), with the
    # same exact account; here only what no other probe can tell: the schema's tables.
    missing: list[str] = []
    grants: list[str] = []
    if scope is not None and not select:
        missing.append(f"SELECT on schema {scope} (its queue tables are invisible)")
        grants.append(f"GRANT SELECT ON {my_ident(scope)}.* TO {who};")
    roles = f" (roles granted: {', '.join(g.roles)}; make the one holding them a default role)"
    if missing:
        return PartialResult(
            data,
            f"account {who} lacks " + "; ".join(missing) + (roles if g.roles else ""),
            " ".join(grants),
        )
    if scope is None and not select:
        seen = selectable_schemas(g)
        readable = f"it can read only {', '.join(seen)}" if seen else "it can read no schema"
        gap = CoverageGap(
            "privilege",
            "schemas without SELECT",
            f"{who} has no global SELECT: {readable}; queue tables in every other schema are "
            f"not examined. Audit each application by URL (mysql://…/app) or "
            f"GRANT SELECT ON `app`.* TO {who}; for each application schema",
        )
        return Covered(data, (gap,))
    return data


_PG_MARKERS = pg_text_array(MARKER_COLUMNS)  # bound as one text (quoting.pg_text_array)


def _pg_role(conn: Connection) -> list[Row]:
    return [as_row(r) for r in conn.rows(sql("postgresql", "privileges_role", conn.version))]


@probe("pg.privileges", "postgresql", ttl=60.0)
def pg_privileges(conn: Connection) -> PgPrivileges | PartialResult:
    # the role's attributes and memberships are the server's (shared catalogs): one read per
    # server and user in the daemon, not one per database (a first look's cold backend paid
    # 1.2-1.4 ms of server CPU for it)
    got = per_server("pg.privileges:role", partial(_pg_role, conn))
    rows = got if isinstance(got, list) else []
    role = rows[0] if rows else {"user": "?", "superuser": False}
    name = to_str(role.get("user"))
    user = pg_ident_text(name)
    hidden = tuple(
        PgUnreadableTable.from_row(as_row(r))
        for r in conn.rows(
            sql("postgresql", "privileges_queue_tables", conn.version),
            {"markers": _PG_MARKERS, "limit": PG_LIMIT},
        )
    )
    sees_all = any(to_bool(role.get(k)) for k in ("superuser", "read_all_stats", "monitor"))
    data = PgPrivileges(user=name, sees_all_sessions=sees_all, unreadable_tables=hidden)
    # pg_monitor is reported by pg.sessions / pg.horizon when their rules run; here only the
    # queue tables, which pg_monitor does not make readable.
    missing: list[str] = []
    grants: list[str] = []
    schemas = sorted({r.schema for r in hidden if not r.schema_usage})
    if schemas:
        missing.append(f"USAGE on schema {', '.join(schemas)}")
        grants += [f"GRANT USAGE ON SCHEMA {pg_ident_text(s)} TO {user};" for s in schemas]
    tables = [pg_ident_text(r.schema, r.table) for r in hidden if not r.table_select]
    if tables:
        missing.append(f"SELECT on queue tables {', '.join(tables)}")
        grants.append(f"GRANT SELECT ON {', '.join(tables)} TO {user};")
    if missing:
        return PartialResult(data, f"role {user} lacks " + "; ".join(missing), " ".join(grants))
    return data
