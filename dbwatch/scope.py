"""Scope (SPEC §3): a target URL naming a database limits everything per-database to it.
Pure helpers the probes and checks share; None means every database."""

from __future__ import annotations

from collections.abc import Mapping

from .snapshot.values import as_rows, opt_str, str_list


def same(a: object, b: object) -> bool:
    """Database/schema names compared as the server may (case-insensitive file systems)."""
    return a is not None and b is not None and str(a).casefold() == str(b).casefold()


def _unquote(name: str) -> str:
    return name.strip().strip('`"')


def deadlock_databases(dl: Mapping[str, object]) -> set[str]:
    """The databases (schemas) of the tables a deadlock record touches, as printed."""
    out = {_unquote(db) for lk in as_rows(dl.get("locks")) if (db := opt_str(lk.get("db")))}
    for t in as_rows(dl.get("transactions")):
        for table in str_list(t.get("tables")):
            db, dot, _ = table.partition(".")
            if dot and db:
                out.add(_unquote(db))
    return out


def deadlock_in_scope(dl: Mapping[str, object], scope: str | None) -> bool:
    """A deadlock none of whose tables is in scope is not this target's. One whose tables
    are unknown (truncated text) is kept: dropping it would hide what may be ours."""
    if scope is None:
        return True
    dbs = deadlock_databases(dl)
    return not dbs or any(same(d, scope) for d in dbs)
