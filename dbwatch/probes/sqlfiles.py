"""The probes' SQL files: sql/<engine>/<name>[_<flavour>][_post_<version_num>].sql, the variant
for this server picked (pg_activity's habit). Below the probe registry, so the modules it
imports (share.py) read SQL without importing the package."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from ..errors import ProbeError
from ..targets.version import FLAVOURS, ServerVersion

SQL_DIR = Path(__file__).with_name("sql")


@cache
def _sql_variants(
    engine: str, name: str, base: Path = SQL_DIR
) -> list[tuple[str | None, int, str]]:
    """(flavour or None for any, minimum version number, text) of every file for `name`:
    <name>.sql, <name>_post_<num>.sql, <name>_<flavour>.sql, <name>_<flavour>_post_<num>.sql."""
    out: list[tuple[str | None, int, str]] = []
    for file in _sql_files(base / engine):
        if not file.startswith(name):  # the glob `{name}*.sql`, without a regex per name
            continue
        path = base / engine / file
        stem = path.stem
        if stem == name:
            out.append((None, 0, path.read_text()))
            continue
        if not stem.startswith(f"{name}_"):
            continue
        rest = stem[len(name) + 1 :]
        flavour: str | None = None
        for f in FLAVOURS:
            if rest == f or rest.startswith(f"{f}_"):
                flavour, rest = f, rest[len(f) + 1 :]
                break
        if rest == "":
            out.append((flavour, 0, path.read_text()))
        elif rest.startswith("post_") and rest[5:].isdigit():
            out.append((flavour, int(rest[5:]), path.read_text()))
    return sorted(out, key=_flavour_then_version)


@cache
def _sql_files(directory: Path) -> tuple[str, ...]:
    """The .sql file names of a directory, listed once (a Path.glob compiles a regex per
    pattern: ~0.2 ms for each of the ~15 SQL names an audit reads; startup)."""
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return ()
    return tuple(sorted(n for n in names if n.endswith(".sql")))


def _flavour_then_version(v: tuple[str | None, int, str]) -> tuple[bool, int]:
    return v[0] is not None, v[1]


def sql(engine: str, name: str, version: ServerVersion, base: Path = SQL_DIR) -> str:
    """The SQL text for this server, from `base` (probes/sql; actions keep theirs apart).
    Files tagged with the server's flavour win over untagged ones and `_post_<num>` compares
    numbers of that flavour only (MariaDB 10.11 never gets a MySQL 8.0 file)."""
    chosen = None
    for tag, min_version, text in _sql_variants(engine, name, base):
        if tag is not None and tag != version.flavour:
            continue
        if version.num >= min_version:
            chosen = text
    if chosen is None:
        raise ProbeError(name, f"no SQL for {version.flavour} {version.num}")
    return chosen
