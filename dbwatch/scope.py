"""Scope (SPEC §3): a target URL naming a database limits everything per-database to it.
Pure helpers the probes and checks share; None means every database."""

from __future__ import annotations


def same(a: object, b: object) -> bool:
    """Database/schema names compared as the server may (case-insensitive file systems)."""
    return a is not None and b is not None and str(a).casefold() == str(b).casefold()
