"""The map is true (issue 25.6): every file, folder and Python name that README.md and the docs
point a newcomer to exists.

- every `dbwatch/...` path named anywhere in the text exists (a placeholder such as `<engine>`
  or a `*` matches at least one file);
- a relative file path anywhere (code blocks and drawings too: `probes/postgresql.py`) and
  a path in backticks relative to the package or one of its packages (`checks/series.py`,
  `sql/<engine>/*.sql`, `rules/*.toml`) exists under the checkout, `dbwatch/` or one of its
  packages;
- a bare module file name in backticks (`lockgraph.py`) is a file somewhere in the checkout,
  and in a row of README's file map, in one of that row's own folders;
- a dotted name in backticks that starts with a dbwatch module (`inputs.open_input`,
  `parsers.innodb_trx.parse_transaction_list`) is importable down to its last part.

Names kept on purpose for what no longer exists (docs/house.md says what moved) are listed in
GONE; each must still be mentioned and still be gone.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import dbwatch

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dbwatch"
# the map (README.md, docs/house.md) is checked in full; the other docs for `dbwatch/...` paths
# (they also name other projects' files, metric names and library calls)
MAPS = [ROOT / "README.md", ROOT / "docs" / "house.md"]
OTHER_DOCS = sorted(set((ROOT / "docs").glob("*.md")) - set(MAPS))
# where a relative path may start: the checkout, the package, each of its packages
BASES = [ROOT, PACKAGE, *sorted(p for p in PACKAGE.rglob("*") if (p / "__init__.py").is_file())]
SKIP_DIRS = {".git", ".queue-libs", ".framework-libs", "__pycache__", ".venv"}

# doc -> names it mentions as gone or as they were (history), which must not exist
GONE: dict[str, set[str]] = {
    "house.md": {
        "web/store.py",
        "cli.HELPS",
        "deadlocks/tailer.ReadResult",
        "parsers/statements.is_queue_name",
    },
}

_DBWATCH_PATH = re.compile(r"(?<![\w/.~-])dbwatch/[\w/.*<>-]*")
# a relative file path anywhere in the text, code blocks and drawings included
_ANY_PATH = re.compile(
    r"(?<![\w/.~:-])(?:[\w-]+/)+[\w.<>*-]+\.(?:py|sql|html|toml|md|yaml|json|sh)\b"
)
_TICKED = re.compile(r"`([^`\s]+)`")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


def _files() -> list[Path]:
    return [
        p for p in ROOT.rglob("*") if p.is_file() and not SKIP_DIRS & set(p.relative_to(ROOT).parts)
    ]


FILE_NAMES = {p.name for p in _files()}
MODULES = {
    m.name.removeprefix("dbwatch.") for m in pkgutil.walk_packages(dbwatch.__path__, "dbwatch.")
}


def _as_glob(path: str) -> str:
    return re.sub(r"<[^>]*>", "*", path).rstrip("/.,;:")


def _exists(path: str, bases: list[Path]) -> bool:
    pattern = _as_glob(path)
    if not pattern:
        return True
    if "*" in pattern:
        return any(any(base.glob(pattern)) for base in bases)
    return any((base / pattern).exists() for base in bases)


def _name_exists(dotted: str) -> bool | None:
    """True/False for a dotted name that starts with a dbwatch module, None for any other."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in MODULES:
            break
    else:
        return None
    if parts[i:] in ([], ["py"]):
        return None  # a file name (`figures.py`), checked as one
    obj: object = importlib.import_module("dbwatch." + ".".join(parts[:i]))
    for attr in parts[i:]:
        if not hasattr(obj, attr):
            return False
        obj = getattr(obj, attr)
    return True


def _path_problem(tok: str) -> str | None:
    """A relative path (`checks/series.py`, `sql/<engine>/*.sql`, `probes/`) or a module path
    with a name (`actions/my_kill.live_transactions`)."""
    if _exists(tok, BASES):
        return None
    dotted = tok.removesuffix("()").replace("/", ".")
    if _DOTTED.fullmatch(dotted) and _name_exists(dotted) is not None:
        return None if _name_exists(dotted) else f"{tok}: no such name in dbwatch"
    return f"{tok}: no such path under the checkout or dbwatch/"


def _ticked_problem(tok: str) -> str | None:
    if "/" in tok:
        path_like = tok.endswith("/") or "*" in tok or "<" in tok or "." in tok.rsplit("/", 1)[1]
        if (
            path_like
            and not tok.startswith(("dbwatch/", "./"))
            and re.fullmatch(r"[\w./*<>()-]+", tok)
        ):
            return _path_problem(tok)
        return None
    if re.fullmatch(r"\w+\.py", tok):
        return None if tok in FILE_NAMES else f"{tok}: no such file"
    if _DOTTED.fullmatch(tok.removesuffix("()")) and _name_exists(tok.removesuffix("()")) is False:
        return f"{tok}: no such name in dbwatch"
    return None


def dbwatch_path_problems(text: str) -> list[str]:
    """Every `dbwatch/...` path, in backticks or not."""
    return [
        f"{p}: no such path"
        for p in sorted(set(_DBWATCH_PATH.findall(text)))
        if p.rstrip("/.,;:") != "dbwatch" and not _exists(p, [ROOT])
    ]


def problems(name: str, text: str) -> list[str]:
    gone = GONE.get(name, set())
    out = dbwatch_path_problems(text)
    out += [
        f"{p}: no such path under the checkout or dbwatch/"
        for p in sorted(set(_ANY_PATH.findall(text)))
        if p not in gone and not _exists(p, BASES)
    ]
    for tok in sorted(set(_TICKED.findall(text))):
        tok = tok.rstrip(",;:")
        if tok in gone or tok.startswith(("/", "~", "..", "http")) or "://" in tok:
            continue
        found = _ticked_problem(tok)
        if found:
            out.append(found)
    return out


def map_row_problems(text: str) -> list[str]:
    """README's file map: a bare file name in a row is in one of the row's own folders (the
    `dbwatch/x/` of its first cell) or in dbwatch/ itself, not merely somewhere."""
    out = []
    for row in re.findall(r"^\| (`dbwatch/.*)$", text, re.MULTILINE):
        first = row.split(" | ", 1)[0]
        dirs = [PACKAGE / d for d in re.findall(r"`dbwatch/([\w/]+)/`", first)]
        for tok in re.findall(r"`(\w+\.py)`", row):
            if not (PACKAGE / tok).is_file() and not any(any(d.rglob(tok)) for d in dirs):
                where = ", ".join(f"dbwatch/{d.name}/" for d in dirs) or "dbwatch/"
                out.append(f"{tok}: not in {where}")
    return out


def test_the_readme_map_rows_name_their_own_files() -> None:
    assert map_row_problems((ROOT / "README.md").read_text()) == []


def test_a_file_in_the_wrong_row_is_caught() -> None:
    row = "| `dbwatch/checks/` | pure functions: PG201 is in `pg_mvcc.py` |"
    assert map_row_problems(row) == ["pg_mvcc.py: not in dbwatch/checks/"]
    row = "| `dbwatch/checks/` | PG201 is in `pg201_pg202_horizon.py`, see `evaluate.py` |"
    assert map_row_problems(row) == []


@pytest.mark.parametrize("doc", MAPS, ids=[d.name for d in MAPS])
def test_every_named_path_exists(doc: Path) -> None:
    assert problems(doc.name, doc.read_text()) == []


@pytest.mark.parametrize("doc", OTHER_DOCS, ids=[d.name for d in OTHER_DOCS])
def test_every_named_package_path_exists(doc: Path) -> None:
    assert dbwatch_path_problems(doc.read_text()) == []


def test_gone_names_are_still_mentioned_and_still_gone() -> None:
    for name, gone in GONE.items():
        text = (ROOT / "docs" / name).read_text()
        for tok in gone:
            assert f"`{tok}`" in text, f"{name} no longer mentions {tok}: drop it from GONE"
            if "/" in tok:
                assert not _exists(tok, BASES), f"{tok} exists again: drop it from GONE"
            else:
                assert _name_exists(tok) is False, f"{tok} exists again: drop it from GONE"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("see `dbwatch/checks/no_such_module.py`", True),
        ("see dbwatch/checks/models.py and `checks/series.py`", False),
        ("`checks/pg_mvcc.py` holds PG201", True),
        ("`sql/<engine>/*.sql` and `rules/*.toml`", False),
        ("`no_such_file.py`", True),
        ("`inputs.open_input`, `findings.nagios_status`", False),
        ("`inputs.open_everything`", True),
        ("/etc/dbwatch/dbwatch.toml, `postgresql://monitor@db1/app`", False),
        ("`actions/my_kill.live_transactions`, `ctx.duration/count`", False),
        ("`actions/my_kill.kill_everything`", True),
        ("`statereader.deadlocks`", True),
        ("```\n  checks/models.py  lock graph\n  checks/pg_mvcc.py  PG201\n```", True),
        ("```\n  checks/models.py  lock graph\n  probes/sql/postgresql/sessions.sql\n```", False),
    ],
)
def test_a_stale_pointer_is_caught(text: str, found: bool) -> None:
    assert bool(problems("x.md", text)) is found
