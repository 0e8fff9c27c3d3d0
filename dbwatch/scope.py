"""Scope (SPEC §3): a target URL naming a database limits everything per-database to it.
Pure helpers the probes and checks share; None means every database."""

from __future__ import annotations

from typing import Any


def same(a: Any, b: Any) -> bool:
    """Database/schema names compared as the server may (case-insensitive file systems)."""
    return a is not None and b is not None and str(a).casefold() == str(b).casefold()


def _unquote(name: str) -> str:
    return name.strip().strip('`"')


def deadlock_databases(dl: dict[str, Any]) -> set[str]:
    """The databases (schemas) of the tables a deadlock record touches, as printed."""
    out = {_unquote(str(lk["db"])) for lk in dl.get("locks") or [] if lk.get("db")}
    for t in dl.get("transactions") or []:
        for table in t.get("tables") or []:
            db, dot, _ = str(table).partition(".")
            if dot and db:
                out.add(_unquote(db))
    return out


def deadlock_in_scope(dl: dict[str, Any], scope: str | None) -> bool:
    """A deadlock none of whose tables is in scope is not this target's. One whose tables
    are unknown (truncated text) is kept: dropping it would hide what may be ours."""
    if scope is None:
        return True
    dbs = deadlock_databases(dl)
    return not dbs or any(same(d, scope) for d in dbs)
