"""Statement sources for QU401/QU402: performance_schema statement history and digests
(MySQL/MariaDB), pg_stat_statements (PostgreSQL). Bounded reads; nothing is enabled or created.

A source that is switched off by configuration is not a failure: its section is
`Unavailable` (reason, fix) and the target line says how to enable it.
"""

from __future__ import annotations

import logging

from ..errors import ProbeError
from ..frozen import frozen
from ..snapshot.statements import (
    Digest,
    Digests,
    History,
    HistoryStatement,
    StatementDigests,
    StatementHistory,
    Unavailable,
)
from ..targets import Connection
from ..targets.quoting import pg_compose, pg_ident
from .registry import probe
from .results import PartialResult
from .share import catalog_cached, per_server
from .sqlfiles import sql

log = logging.getLogger(__name__)

HISTORY_LIMIT = 10_000  # statements read per cycle: the default history_long size
DIGEST_LIMIT = 500  # digest rows read per cycle, most called first
PFS_GRANT = "GRANT SELECT ON performance_schema.* TO '<monitor>'@'%';"
PG_GRANT = "GRANT pg_read_all_stats TO <monitor_user>;  -- or pg_monitor"
PFS_OFF = "performance_schema is OFF: no statement history or digests for QU401/QU402"
PFS_ON_FIX = (
    "under [mysqld] in my.cnf set `performance_schema = ON`, "
    "`performance-schema-consumer-events-statements-current = ON` and "
    "`performance-schema-consumer-events-statements-history-long = ON`, then restart "
    "the server (see `dbwatch explain QU401`)"
)
CONSUMERS_FIX = (
    "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME "
    "LIKE 'events_statements_%';  -- until the next restart; to keep it, "
    "`performance-schema-consumer-events-statements-current = ON` and "
    "`performance-schema-consumer-events-statements-history-long = ON` in my.cnf"
)
DIGEST_FIX = (
    "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME IN "
    "('global_instrumentation', 'statements_digest');"
)
PGSS_FIX = (
    "pg_stat_statements: add it to `shared_preload_libraries` in postgresql.conf "
    "(restart), then `CREATE EXTENSION pg_stat_statements;` in this database"
)
_logged: set[tuple[str, str]] = set()


def unavailable(
    conn: Connection, reason: str, fix: str, consumers: dict[str, bool] | None = None
) -> Unavailable:
    """The section of a source switched off by configuration; logged once per target."""
    key = (conn.spec.name, reason)
    if key not in _logged:
        _logged.add(key)
        log.info("%s: %s; to enable: %s", conn.spec.name, reason, fix)
    if consumers:
        return Unavailable(reason, fix, tuple(consumers.items()))
    # one object per reason (frozen, never changed): an idle database's every cycle gives
    # the same section, which the rules reading it see unchanged (compared by identity)
    hit = _UNAVAILABLE.get((reason, fix))
    if hit is None:
        hit = _UNAVAILABLE[(reason, fix)] = Unavailable(reason, fix, ())
    return hit


_UNAVAILABLE: dict[tuple[str, str], Unavailable] = {}


Row = dict[str, object]


def _rows(conn: Connection, name: str, params: dict[str, object] | None = None) -> list[Row]:
    """Query; a refusal names the performance_schema grant rather than a generic one."""
    try:
        return list(conn.rows(sql("mysql", name, conn.version), params))
    except ProbeError as exc:
        if exc.privilege:
            raise ProbeError(name, exc.detail, PFS_GRANT, privilege=True) from None
        raise


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")


def _int(value: object) -> int:
    """A counter from the driver (int, Decimal or digits as text); 0 when it is none of those."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    text = _text(value).strip()
    return int(text) if text.lstrip("-").isdigit() else 0


@frozen
class Consumers:
    """performance_schema on/off, the enabled statement consumers and the buffer sizes."""

    performance_schema: bool
    enabled: dict[str, bool]
    history_long_size: int
    history_size: int
    max_sql_text_length: int

    def on(self, name: str) -> bool:
        return self.enabled.get(name, False)

    def history_table(self) -> str | None:
        if not (
            self.on("global_instrumentation")
            and self.on("thread_instrumentation")
            and self.on("events_statements_current")
        ):
            return None
        if self.on("events_statements_history_long") and self.history_long_size > 0:
            return "events_statements_history_long"
        if self.on("events_statements_history") and self.history_size > 0:
            return "events_statements_history"
        return None


def consumers(conn: Connection) -> Consumers:
    """performance_schema on/off, the enabled statement consumers and the buffer sizes: the
    server's, read once per server and share interval in the daemon (both statement probes
    of every schema of that server ask)."""
    got = per_server("my.statement_consumers", _consumers, conn)
    return got if isinstance(got, Consumers) else _consumers(conn)


def _consumers(conn: Connection) -> Consumers:
    var = {
        _text(r["Variable_name"]).lower(): _text(r["Value"])
        for r in _rows(conn, "statement_variables")
    }
    on = var.get("performance_schema", "OFF").upper() in ("ON", "1")
    enabled = {
        _text(r["name"]): _text(r["enabled"]).upper() == "YES"
        for r in (_rows(conn, "statement_consumers") if on else [])
    }

    def size(name: str) -> int:
        return max(_int(var.get(f"performance_schema_{name}", "0")), 0)

    return Consumers(
        on,
        enabled,
        size("events_statements_history_long_size"),
        size("events_statements_history_size"),
        size("max_sql_text_length"),
    )


@probe("my.statement_history", "mysql", grant=PFS_GRANT)
def statement_history(conn: Connection) -> History:
    """Recent statements of other sessions, ordered by (thread, event), for transaction grouping."""
    c = consumers(conn)
    if not c.performance_schema:
        return unavailable(conn, PFS_OFF, PFS_ON_FIX)
    table = c.history_table()
    if table is None:
        off = [
            n
            for n in (
                "events_statements_current",
                "events_statements_history",
                "events_statements_history_long",
            )
            if not c.on(n)
        ]
        return unavailable(
            conn,
            "statement history: performance_schema consumers "
            f"{', '.join(off) or 'global/thread instrumentation'} disabled",
            CONSUMERS_FIX,
            consumers=c.enabled,
        )
    if table.endswith("_long"):
        big = c.history_long_size > HISTORY_LIMIT
        name = "statement_history_newest" if big else "statement_history_long"
    else:
        name = "statement_history_recent"
    rows = _rows(conn, name, {"limit": HISTORY_LIMIT, "schema": conn.spec.scoped_database})
    return StatementHistory(
        source=f"performance_schema.{table}",
        limit=HISTORY_LIMIT,
        buffer_size=c.history_long_size if table.endswith("_long") else c.history_size,
        max_sql_text_length=c.max_sql_text_length,
        statements=tuple(
            HistoryStatement(_int(r["thread_id"]), _int(r["event_id"]), _text(r["sql_text"]))
            for r in rows
        ),
    )


@probe("my.statement_digests", "mysql", grant=PFS_GRANT)
def statement_digests(conn: Connection) -> Digests:
    """Digests of locking reads and deletes, most called first."""
    c = consumers(conn)
    if not c.performance_schema:
        return unavailable(conn, PFS_OFF, PFS_ON_FIX)
    if not (c.on("global_instrumentation") and c.on("statements_digest")):
        return unavailable(
            conn, "statement digests: statements_digest consumer disabled", DIGEST_FIX
        )
    params: dict[str, object] = {
        "for_update": "%FOR UPDATE%",
        "for_share": "%FOR SHARE%",
        "share_mode": "%LOCK IN SHARE MODE%",
        "delete": "%DELETE%",
        "limit": DIGEST_LIMIT,
        "schema": conn.spec.scoped_database,
    }
    rows = _rows(conn, "statement_digests", params)
    return StatementDigests(
        source="performance_schema.events_statements_summary_by_digest",
        limit=DIGEST_LIMIT,
        digests=tuple(
            Digest(
                text=_text(r["digest_text"]),
                calls=_int(r["calls"]),
                scope=_text(r["schema_name"]) or None,
                idle_seconds=None if r["idle_seconds"] is None else _int(r["idle_seconds"]),
            )
            for r in rows
        ),
    )


def _digests_sql(conn: Connection, schema: str) -> str:
    """The digest query on the extension's view, composed by psycopg (the schema name from
    pg_extension is an identifier, never template text); '%' doubled for the paramstyle."""
    view = pg_ident(schema.replace("%", "%%"), "pg_stat_statements")
    text = sql("postgresql", "statement_digests", conn.version)
    return pg_compose(text, view=view)


@probe("pg.statement_digests", "postgresql", grant=PG_GRANT)
def pg_statement_digests(conn: Connection) -> Digests | PartialResult:
    """pg_stat_statements rows of locking reads and deletes, when the extension is installed."""
    ext: list[Row] = catalog_cached(
        "pg_stat_statements",
        lambda: list(conn.rows(sql("postgresql", "statement_digests_extension", conn.version))),
    )
    if not ext:
        return unavailable(
            conn,
            "statement digests: pg_stat_statements is not installed in this database",
            PGSS_FIX,
        )
    schema = _text(ext[0]["schema"])
    text = _digests_sql(conn, schema)
    patterns = ["%for update%", "%for no key update%", "%for share%", "%for key share%", "%delete%"]
    try:
        rows: list[Row] = list(conn.rows(text, {"patterns": patterns, "limit": DIGEST_LIMIT}))
    except ProbeError as exc:
        if "shared_preload_libraries" not in exc.detail:
            raise
        return unavailable(
            conn, "statement digests: pg_stat_statements is installed but not loaded", PGSS_FIX
        )
    data = StatementDigests(
        source=f"{schema}.pg_stat_statements",
        limit=DIGEST_LIMIT,
        version=_text(ext[0]["version"]),
        digests=tuple(
            Digest(
                text=_text(r["query"]),
                calls=_int(r["calls"]),
                scope=None if r["database"] is None else _text(r["database"]) or None,
            )
            for r in rows
        ),
    )
    if not ext[0]["sees_all"]:
        return PartialResult(
            data, "pg_stat_statements hides other roles' query text from this role", PG_GRANT
        )
    return data
