"""The actions' SQL (actions/sql/<engine>/), chosen by flavour and version like the probes':
what ends sessions lives apart from what only reads."""

from __future__ import annotations

from pathlib import Path

from ..probes import sql
from ..targets import Connection

ACTION_SQL = Path(__file__).with_name("sql")


def action_sql(conn: Connection, name: str) -> str:
    """The statement `name` for this connection's engine, flavour and version."""
    engine = "postgresql" if conn.engine == "postgresql" else "mysql"
    return sql(engine, name, conn.version, ACTION_SQL)
