"""Imports point down the flow (issue 13.3): every dbwatch-internal import, read with `ast`
(absolute and relative, module-level and inside functions, under TYPE_CHECKING too), goes from a
layer to one the table below allows.

    targets/ -> probes/ -> snapshot -> checks/ -> findings -> report | alerts/ | actions/

with daemon/ around them, and cli.py + commands/ on top. A layer is a top-level module or
package of dbwatch. Adding a layer, or an import the table does not allow, fails here: move the
code down (or the shared piece below both) instead of widening the table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "dbwatch"
ROOT = "dbwatch"  # dbwatch/__init__.py: __version__ only; and BASE below

# layer -> the layers it may import (its own is always allowed). Bottom of the flow first.
ALLOWED: dict[str, frozenset[str]] = {
    name: frozenset(deps)
    for name, deps in {
        # the base: no dbwatch imports, or only each other
        ROOT: set(),
        "errors": set(),
        "durations": set(),
        # the one registration idiom: Registry[T], discovery by an explicit module list
        "registry": set(),
        # the queue libraries are pure data; targets only for identifier quoting in the fixes
        # they print (Laravel's legacy-index SQL, shared by QU301 and the deadlock diagnosis)
        "queues": {ROOT, "registry", "targets"},
        "termout": set(),
        "targets": {ROOT, "errors"},  # the only code that talks to a driver
        "catalogue": {ROOT, "durations", "errors", "rule_heads"},
        "rule_heads": set(),  # generated data: the shipped rule heads, parsed
        "config": {ROOT, "catalogue", "durations", "errors", "targets"},
        # parsers of untrusted text
        "parsers": {ROOT},
        # the typed snapshot: rows reuse the parsers' dataclasses
        "snapshot": {ROOT, "parsers", "registry"},
        "findings": {ROOT, "snapshot"},
        "scope": set(),
        # the one input-file opener (gzip by magic) and binary sniffing, typed paths
        "inputs": {"errors"},
        # query-log patterns yield findings of their own (headline from the rule's TOML; and
        # read the server version)
        # ... and read PostgreSQL log lines with the deadlock parser's reader (parsers/pglog.py)
        "sqlpatterns": {
            ROOT,
            "catalogue",
            "errors",
            "findings",
            "inputs",
            "parsers",
            "queues",
            "targets",
        },
        "probes": {
            ROOT,
            "config",
            "errors",
            "parsers",
            "queues",
            "registry",
            "snapshot",
            "targets",
        },
        # the deadlock analysis: parsed deadlocks in, records with their diagnosis out (pure)
        "deadlocks": {
            ROOT,
            "errors",
            "findings",
            "inputs",
            "parsers",
            "queues",
            "records",  # the typed DeadlockRecord it builds
            "snapshot",
            "sqlpatterns",
        },
        # pure checks; targets only for identifier quoting in the fixes they print
        "checks": {
            ROOT,
            "catalogue",
            "deadlocks",
            "durations",
            "findings",
            "queues",
            "registry",
            "snapshot",
            "sqlpatterns",
            "targets",
        },
        "evaluate": {ROOT, "catalogue", "checks", "config", "findings", "snapshot"},
        "pipeline": {
            ROOT,
            "catalogue",
            "checks",
            "config",
            "errors",
            "evaluate",
            "findings",
            "probes",
            "snapshot",
            "targets",
        },
        "report": {"findings", "pipeline", "targets", "termout"},
        # a target's measured figures: the daemon's metrics and history, the Nagios perfdata
        "figures": {"checks", "findings", "snapshot"},
        # `--format nagios`: the status line, the findings as long text, perfdata with the rules'
        # own thresholds
        "nagios": {
            ROOT,
            "catalogue",
            "config",
            "durations",
            "figures",
            "findings",
            "pipeline",
            "targets",
        },
        # the daemon's state records, below daemon/ and its readers (alerts/, web/, commands/)
        "records": {ROOT, "findings", "scope", "snapshot", "targets"},
        # alerts see the state through alerts.state.AlertState, never daemon/
        "alerts": {ROOT, "config", "findings", "records", "snapshot", "targets"},
        # terminate reuses the one lock graph (checks), reads sessions through probes and the
        # live InnoDB transaction list with the one parser of it (parsers.innodb_trx)
        "actions": {
            ROOT,
            "checks",
            "config",
            "durations",
            "errors",
            "findings",
            "parsers",
            "probes",
            "records",  # the typed ActionRecord it keeps and announces
            "snapshot",
            "targets",
        },
        # the daemon drives everything below it; never commands/, cli or web/
        "daemon": {
            ROOT,
            "actions",
            "alerts",
            "catalogue",
            "config",
            "deadlocks",
            "durations",
            "errors",
            "evaluate",
            "figures",
            "findings",
            "pipeline",
            "probes",
            "records",
            "snapshot",
            "targets",
        },
        # the read-only state reader: status, history and the dashboard all read through it
        "statereader": {ROOT, "daemon", "findings", "records", "snapshot"},
        # the dashboard reads the daemon's state (read-only)
        "web": {
            ROOT,
            ROOT,
            "durations",
            "records",
            "snapshot",
            "statereader",
            "targets",
        },
        # one module per command: anything but cli (the parser reaches completion by argument)
        "commands": {
            "actions",
            "catalogue",
            "config",
            "daemon",
            "deadlocks",
            "durations",
            "errors",
            "evaluate",
            "findings",
            "inputs",
            "nagios",
            "pipeline",
            "probes",
            "records",
            "registry",
            "report",
            "snapshot",
            "sqlpatterns",
            "statereader",
            "targets",
            "termout",
            "web",
        },
        "cli": {ROOT, "commands", "errors", "targets", "termout"},  # --help at COLUMNS
        "manpage": {ROOT, "cli"},
        "__main__": {"cli"},
    }.items()
}

# Imports the flow does not allow, left for now: (importing layer, imported layer) -> why.
# Each must still occur (a stale entry fails), so delete it when the import goes.
PENDING: dict[tuple[str, str], str] = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    base = PACKAGE.parent / rel
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(module: str, source: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, imported dbwatch module) for every import in `source`, wherever it stands."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base_parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.append((node.lineno, sub if _is_module(sub) else base))
    return [(line, name) for line, name in found if name == ROOT or name.startswith(ROOT + ".")]


# Modules of the package's own base, beside dbwatch/__init__.py: imported by any layer.
# the frozen-dataclass decorator (startup) and its methods compiled ahead (generated)
BASE = {"dbwatch.frozen", "dbwatch.frozen_code"}


def layer_of(module: str) -> str:
    if module in BASE:
        return ROOT
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ROOT


def all_modules() -> list[tuple[str, Path]]:
    return sorted((module_name(p), p) for p in PACKAGE.rglob("*.py"))


def edges() -> list[tuple[str, str, str, int, str]]:
    """(from layer, to layer, from module, line, imported module), across layers."""
    out = []
    for module, path in all_modules():
        for line, target in imports_of(module, path.read_text(), path.name == "__init__.py"):
            a, b = layer_of(module), layer_of(target)
            if a != b:
                out.append((a, b, module, line, target))
    return out


def test_every_layer_is_placed_in_the_flow() -> None:
    layers = {layer_of(m) for m, _ in all_modules()}
    assert layers - ALLOWED.keys() == set(), "a new top-level module: add it to ALLOWED"
    assert ALLOWED.keys() - layers == set(), "a layer that no longer exists: drop it"
    unknown = {d for deps in ALLOWED.values() for d in deps} - ALLOWED.keys()
    assert unknown == set()


def test_the_allowed_flow_has_no_cycle() -> None:
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(layer: str, path: list[str]) -> None:
        if state.get(layer) == 2:
            return
        assert state.get(layer) != 1, "cycle in ALLOWED: " + " -> ".join([*path, layer])
        state[layer] = 1
        for dep in sorted(ALLOWED[layer]):
            visit(dep, [*path, layer])
        state[layer] = 2

    for layer in sorted(ALLOWED):
        visit(layer, [])


def test_imports_point_down_the_flow() -> None:
    bad = [
        f"{module}:{line} imports {target} ({a} -> {b})"
        for a, b, module, line, target in edges()
        if b not in ALLOWED[a] and (a, b) not in PENDING
    ]
    assert bad == []


def test_pending_exceptions_are_still_needed() -> None:
    used = {(a, b) for a, b, *_ in edges()}
    stale = {k: why for k, why in PENDING.items() if k not in used}
    assert stale == {}, "this import is gone: delete its PENDING entry"
    assert all(b not in ALLOWED[a] for a, b in PENDING), "PENDING duplicates ALLOWED"


def test_nothing_but_cli_imports_commands() -> None:
    assert {a for a, deps in ALLOWED.items() if "commands" in deps} == {"cli"}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f():\n    from ..daemon import state\n", (2, "dbwatch.daemon.state")),
        ("from ..daemon.state import State\n", (1, "dbwatch.daemon.state")),
        ("import dbwatch.daemon.loop\n", (1, "dbwatch.daemon.loop")),
        ("from dbwatch.daemon import loop\n", (1, "dbwatch.daemon.loop")),
        ("from .. import __version__\n", (1, "dbwatch")),
        ("from . import lockgraph\n", (1, "dbwatch.checks.lockgraph")),
        ("import json\nfrom os import path\n", None),
    ],
)
def test_imports_are_resolved(source: str, expected: tuple[int, str] | None) -> None:
    assert imports_of("dbwatch.checks.x", source) == ([expected] if expected else [])


def test_an_upward_import_is_caught() -> None:
    source = "def f() -> None:\n    from ..daemon import state\n"
    for line, target in imports_of("dbwatch.checks.lockgraph", source):
        assert layer_of(target) not in ALLOWED["checks"], (line, target)


# --- issue 25.6: a truthful, tight map ---------------------------------------------------------


# Allowances a branch not merged yet uses (issue 25 was done beside it): tolerated while unused.
# Once merged they are used: the test then says to delete the entry here.
MERGING: dict[tuple[str, str], str] = {}


def test_every_allowance_is_used() -> None:
    """An allowed edge no module uses is a false statement about the code: drop it."""
    used = {(a, b) for a, b, *_ in edges()}
    unused = sorted((a, b) for a, deps in ALLOWED.items() for b in deps if (a, b) not in used)
    assert [e for e in unused if e not in MERGING] == [], "allowed, never imported: drop it"
    merged = sorted(e for e in MERGING if e in used)
    assert merged == [], "used now: delete its MERGING entry"
    assert all(b in ALLOWED[a] for a, b in MERGING)


def module_graph() -> dict[str, set[str]]:
    """module -> the dbwatch modules it imports inside its own layer (every import: module
    level, in functions, under TYPE_CHECKING)."""
    graph: dict[str, set[str]] = {}
    for module, path in all_modules():
        found = imports_of(module, path.read_text(), path.name == "__init__.py")
        graph[module] = {t for _, t in found if layer_of(t) == layer_of(module) and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


# Circles left for now: the sorted modules of each -> why (none: issue 25.6 broke the last
# five). Each must still be a circle (a stale entry fails).
CIRCLES_PENDING: dict[tuple[str, ...], str] = {}


def test_no_import_circle_inside_a_package() -> None:
    found = {tuple(c) for c in cycles(module_graph())}
    assert sorted(found - CIRCLES_PENDING.keys()) == []
    assert sorted(CIRCLES_PENDING.keys() - found) == [], "no longer a circle: delete its entry"


def test_a_circle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# Database drivers: only targets/ (the watched databases) and the state database's modules.
DRIVERS = ("psycopg", "pymysql", "sqlite3")
DRIVER_HOMES = ("dbwatch.targets", "dbwatch.daemon.statedb", "dbwatch.statereader")
# Driver imports elsewhere, left for now: module -> why. Each must still occur (a stale entry
# fails), so delete it when the import goes.
DRIVER_PENDING: dict[str, str] = {}


def driver_imports() -> list[tuple[str, int, str]]:
    out = []
    for module, path in all_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in DRIVERS:
                    out.append((module, node.lineno, name))
    return out


def test_drivers_are_imported_only_by_targets_and_the_state_database() -> None:
    found = driver_imports()
    bad = [
        f"{m}:{line} imports {name}"
        for m, line, name in found
        if not m.startswith(DRIVER_HOMES) and m not in DRIVER_PENDING
    ]
    assert bad == []
    stale = set(DRIVER_PENDING) - {m for m, _, _ in found}
    assert stale == set(), "this driver import is gone: delete its DRIVER_PENDING entry"


# --- the README states this order: its numbered list of layers, bottom up ------------------


README = PACKAGE.parent / "README.md"


def readme_lines() -> dict[str, int]:
    """layer -> the number of the README list line naming it: every `name`, `name/` or
    `name.py` outside parentheses (asides) on that numbered line and its continuation."""
    text = README.read_text()
    start = text.index("\n1. ", text.index("The real import\norder, bottom up"))
    items = re.split(r"\n(\d+)\. ", text[start : text.index("\n\n", start + 1)])[1:]
    lines: dict[str, int] = {}
    for number, body in zip(items[::2], items[1::2]):
        while re.search(r"\([^()]*\)", body):
            body = re.sub(r"\([^()]*\)", "", body)  # asides name other things
        for name in re.findall(r"`([a-z_]+)(?:/|\.py)?`", body):
            assert name not in lines, f"README lists {name} twice"
            lines[name] = int(number)
    return lines


def test_the_readme_states_the_real_import_order() -> None:
    """Every layer is on one line of README's list, and imports only layers on lines above."""
    lines = readme_lines()
    missing = sorted(set(ALLOWED) - {ROOT} - set(lines))
    assert missing == [], "a layer the README's layer list does not place"
    assert sorted(set(lines) - set(ALLOWED)) == [], "the README names a layer that is not one"
    upward = sorted(
        f"{a} (line {lines[a]}) imports {b} (line {lines[b]})"
        for a, deps in ALLOWED.items()
        for b in deps
        if a in lines and b in lines and lines[b] >= lines[a]
    )
    assert upward == [], "README's layer list is not the import order"


def test_the_readme_list_is_tight() -> None:
    """Each layer stands on the line just above the highest layer it imports (nothing: line 1),
    so the list also says what each layer does not need: `scope` on line 3 hid that it
    imports nothing."""
    lines = readme_lines()
    loose = sorted(
        f"{a} (line {lines[a]}) belongs on line {want}"
        for a, deps in ALLOWED.items()
        if a in lines
        and (want := 1 + max((lines[b] for b in deps if b in lines), default=0)) != lines[a]
    )
    assert loose == [], "README's layer list places a layer higher than its imports need"
