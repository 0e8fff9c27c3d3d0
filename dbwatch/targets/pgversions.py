"""psycopg's and psycopg_binary's `__version__` without importing `importlib.metadata`.

Both packages' `version` modules call `importlib.metadata.version(...)` when psycopg is
imported: importing `importlib.metadata` (with zipfile, email, csv, inspect...) and scanning
sys.path costs ~42 M instructions, a twentieth of a whole one-target PostgreSQL audit (~8 ms),
for two strings dbwatch never shows. The same strings are in the distributions' METADATA files:
`preset()`, called before psycopg is imported, reads them the way importlib.metadata finds
them (the first sys.path entry holding a `<name>-<version>.dist-info` of the project) and
registers the two `version` modules with those values. Whatever it cannot read with certainty
— another kind of entry on sys.path or meta_path that importlib.metadata would search, two
candidates in one directory, an `.egg-info`, no `Version:` line — leaves that module alone,
and psycopg imports it as it always did (tests/test_startup.py compares both values with
importlib.metadata's).
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

# module -> the distribution its `version` module asks importlib.metadata about
_DISTRIBUTIONS = (("psycopg.version", "psycopg"), ("psycopg_binary.version", "psycopg_binary"))


def preset() -> None:
    """Register psycopg's and psycopg_binary's `version` modules, read from METADATA (before
    `import psycopg`; a no-op once psycopg or importlib.metadata is imported)."""
    if "psycopg" in sys.modules or "importlib.metadata" in sys.modules:
        return
    # importlib.metadata also asks every meta-path finder with a find_distributions (and
    # searches zip files on sys.path): with such a finder, leave the answer to it
    for finder in sys.meta_path:
        searches = getattr(finder, "find_distributions", None) is not None
        if searches and getattr(finder, "__name__", "") != "PathFinder":
            return
    listed: dict[str, list[str] | OSError] = {}  # each sys.path entry listed once
    for module, dist in _DISTRIBUTIONS:
        version = _metadata_version(dist, listed)
        if version is None or module in sys.modules:
            continue
        stub = ModuleType(module, f"{dist} distribution version (read by dbwatch, pgversions.py)")
        stub.__version__ = version  # type: ignore[attr-defined]
        sys.modules[module] = stub


def attach() -> None:
    """After `import psycopg`: the registered `version` modules as their packages' attributes,
    as an import would have left them."""
    for module, _dist in _DISTRIBUTIONS:
        package, _, name = module.partition(".")
        mod, parent = sys.modules.get(module), sys.modules.get(package)
        if mod is not None and parent is not None and not hasattr(parent, name):
            setattr(parent, name, mod)


def _normal(name: str) -> str:
    """A project name as importlib.metadata compares them (`Prepared.normalize`)."""
    out: list[str] = []
    in_run = False  # a run of separators becomes one "_" (re.sub(r"[-_.]+", "_", ...))
    for ch in name.lower():
        if ch in "-_.":
            if not in_run:
                out.append("_")
            in_run = True
        else:
            out.append(ch)
            in_run = False
    return "".join(out)


def _metadata_version(
    dist: str, listed: dict[str, list[str] | OSError] | None = None
) -> str | None:
    """The `Version:` of the first `<dist>-*.dist-info` on sys.path, or None when unsure
    (`listed`: the entries' listings so far, kept for the next call)."""
    want = _normal(dist)
    listed = {} if listed is None else listed
    if want[:1] in ("", "_"):
        return None  # not a name the shortcut below is exact for
    for entry in sys.path:
        path = entry or "."
        children = listed.get(path)
        if children is None:
            try:
                children = listed[path] = os.listdir(path)
            except OSError as exc:
                children = listed[path] = exc
        if isinstance(children, NotADirectoryError):
            return None  # a zip file: importlib.metadata would search it
        if isinstance(children, OSError):
            continue
        # a name normalizes to `want` only if it starts with want's first character (want
        # starts with none of "-_."): the rest are not normalized (a site-packages holds
        # hundreds of entries)
        first = want[:1]
        found = [
            c
            for c in children
            if c[:1].lower() == first
            and c.lower().endswith((".dist-info", ".egg-info", ".egg"))
            and _normal(c.lower().rpartition(".")[0].partition("-")[0]) == want
        ]
        if not found:
            continue
        if len(found) != 1 or not found[0].lower().endswith(".dist-info"):
            return None
        return _version_header(os.path.join(path, found[0], "METADATA"))
    return None


def _version_header(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    break  # the end of the headers
                key, sep, value = line.partition(":")
                if sep and key.strip().lower() == "version":
                    return value.strip() or None
    except (OSError, UnicodeDecodeError):
        return None
    return None
