"""One registration idiom (issue 25.6): probes, checks, snapshot sections, queue libraries and
commands are each a `Registry[T]` (dbwatch/registry.py) whose discovery is an explicit module
list, imported once, on first read. A module that registers but is missing from its list, a
listed module that registers nothing, and a registry read at import all fail here."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dbwatch.registry import Registry

ROOT = Path(__file__).resolve().parents[1]

# registry (module, attribute) -> the call a module registers with
REGISTRIES = {
    ("dbwatch.probes.registry", "PROBES"): "probe",
    ("dbwatch.checks", "CHECKS"): "check",
    ("dbwatch.snapshot.sections", "SECTIONS"): "section",
    ("dbwatch.queues.base", "LIBRARIES"): "queue_library",
}

# In a fresh process: what the registry's own discovery finds, then what importing every module
# of its package adds.
DISCOVER = r"""
import importlib, json, pkgutil, sys
module, attr = sys.argv[1], sys.argv[2]
reg = getattr(importlib.import_module(module), attr)
found = list(reg)
package = importlib.import_module(module.rsplit(".", 1)[0] if attr != "CHECKS" else module)
for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
    importlib.import_module(info.name)
print(json.dumps({"found": found, "all": list(reg)}))
"""


def _run(code: str, *argv: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize(("where", "call"), REGISTRIES.items(), ids=lambda v: str(v))
def test_discovery_finds_every_registration(where: tuple[str, str], call: str) -> None:
    got = json.loads(_run(DISCOVER, *where))
    assert got["found"], "discovery registered nothing"
    assert got["all"] == got["found"], "registered by a module missing from the list"


@pytest.mark.parametrize(("where", "call"), REGISTRIES.items(), ids=lambda v: str(v))
def test_every_listed_module_registers(where: tuple[str, str], call: str) -> None:
    """A listed module calls its registry's decorator or declaration (read from its source)."""
    import importlib

    reg: Registry[object] = getattr(importlib.import_module(where[0]), where[1])
    for module in reg.modules:
        path = ROOT / (module.replace(".", "/") + ".py")
        calls = {
            n.func.id
            for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        assert call in calls, f"{module} is listed but never calls {call}()"


def test_nothing_is_listed_from_disk() -> None:
    """Discovery is the explicit lists, not a directory listing (issue 28: per-cycle cost)."""
    used = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "dbwatch").rglob("*.py")
        if "iter_modules" in p.read_text() or "walk_packages" in p.read_text()
    ]
    assert used == []


LAZY = r"""
import sys
import dbwatch.checks, dbwatch.probes, dbwatch.snapshot, dbwatch.commands
from dbwatch.cli import main
try:
    main(["--version"])
except SystemExit:
    pass
print(" ".join(sorted(m for m in sys.modules if m.startswith("dbwatch."))))
"""


def test_importing_a_registry_imports_none_of_its_modules() -> None:
    """Startup: the packages load their registries' modules only when a registry is read."""
    mods = set(_run(LAZY).split())
    from dbwatch.checks import CHECKS
    from dbwatch.probes import PROBES
    from dbwatch.snapshot.sections import SECTIONS

    for reg in (CHECKS, PROBES, SECTIONS):
        assert not mods & set(reg.modules), (reg.kind, mods & set(reg.modules))
    assert not any(m.startswith("dbwatch.commands.") for m in mods)


def test_queue_libraries_keep_their_recognition_order() -> None:
    from dbwatch.queues import LIBRARIES

    assert [f"dbwatch.queues.{m}" for m in _module_names(LIBRARIES)] == list(LIBRARIES.modules)


def _module_names(reg: Registry[object]) -> list[str]:
    import sys as _sys

    by_object = {
        id(getattr(_sys.modules[m], "LIBRARY", None)): m.rsplit(".", 1)[1] for m in reg.modules
    }
    return [by_object[id(lib)] for lib in reg.values()]


def test_command_order_is_the_help_order() -> None:
    from dbwatch.commands import COMMANDS

    assert list(COMMANDS) == [
        "audit",
        "deadlocks",
        "terminate",
        "watch",
        "status",
        "history",
        "rules",
        "explain",
        "config",
        "completion",
    ]


def test_a_name_registered_twice_fails() -> None:
    reg: Registry[int] = Registry("thing")
    reg.add("a", 1)
    with pytest.raises(ValueError, match="thing 'a' is registered twice"):
        reg.add("a", 2)
    assert reg.replace("a", 3) == 1 and reg["a"] == 3
    with pytest.raises(KeyError):
        reg["b"] = 4  # replacing never adds


def test_discovery_runs_once_and_a_module_reading_while_loading_sees_what_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg: Registry[int] = Registry("thing", ("regmod_a", "regmod_b"))
    monkeypatch.setitem(sys.modules, "regtest_registry", reg)
    (tmp_path / "regmod_a.py").write_text(
        "import regtest_registry as r\nr.add('a', 1)\nSEEN = sorted(r)\n"
    )
    (tmp_path / "regmod_b.py").write_text("import regtest_registry as r\nr.add('b', 2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert reg.registered() == {} and "not loaded" in repr(reg)
        assert dict(reg) == {"a": 1, "b": 2}
        assert sys.modules["regmod_a"].SEEN == ["a"]  # no recursion into regmod_b
        reg.load()  # once: nothing is imported or registered again
        assert dict(reg) == {"a": 1, "b": 2}
    finally:
        sys.modules.pop("regmod_a", None)
        sys.modules.pop("regmod_b", None)


def test_a_reader_in_another_thread_waits_for_the_whole_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg: Registry[int] = Registry("thing", ("regslow_a", "regslow_b"))
    monkeypatch.setitem(sys.modules, "regslow_registry", reg)
    started, release = threading.Event(), threading.Event()
    monkeypatch.setitem(sys.modules, "regslow_events", (started, release))
    (tmp_path / "regslow_a.py").write_text(
        "import regslow_registry as r, regslow_events as e\nr.add('a', 1)\n"
        "e[0].set()\ne[1].wait(10)\n"
    )
    (tmp_path / "regslow_b.py").write_text("import regslow_registry as r\nr.add('b', 2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[list[str]] = []
    first = threading.Thread(target=reg.load)
    try:
        first.start()
        assert started.wait(10)
        second = threading.Thread(target=lambda: seen.append(sorted(reg)))
        second.start()
        second.join(0.2)
        assert second.is_alive(), "read a half-loaded registry"
        release.set()
        second.join(10)
        first.join(10)
        assert seen == [["a", "b"]]
    finally:
        release.set()
        for m in ("regslow_a", "regslow_b"):
            sys.modules.pop(m, None)
