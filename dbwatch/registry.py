"""The one registration idiom: a typed `Registry[T]` of named entries, filled by its kind's
decorator or declaration (`@probe`, `@check`, `section(...)`, `queue_library(...)`,
`command(...)`) and found by importing an explicit, ordered list of modules once per process,
on first read.

Nothing is listed from disk and nothing is imported before something reads the registry, so a
command that reads no registry (`--version`) imports none of the registered modules.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TypeVar, overload

T = TypeVar("T")
D = TypeVar("D")


class Registry(Mapping[str, T]):
    """name -> entry, in registration order (discovery imports `modules` in their order).

    Reading it (`[name]`, `get`, `in`, iteration, `len`) first imports every module of
    `modules` that is not imported yet, once; modules register with `add` as they load.
    Registering never triggers discovery, so a module may register while others load."""

    def __init__(self, kind: str, modules: tuple[str, ...] = ()) -> None:
        self.kind = kind  # "probe", "check": for messages
        self.modules = modules  # absolute module names, imported in this order
        self._entries: dict[str, T] = {}
        self._loaded = False
        self._loading = False
        self._imported: set[str] = set()  # by load_only
        self._lock = threading.RLock()

    def add(self, name: str, entry: T) -> T:
        """Register `entry` as `name`; a name registered twice is a bug (two modules would
        silently replace each other depending on import order)."""
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry
        return entry

    def replace(self, name: str, entry: T) -> T:
        """Put `entry` in place of the registered `name` (a decorator adding to an entry just
        registered; a test swapping one probe). Returns the entry it replaced."""
        old = self._entries[name]
        self._entries[name] = entry
        return old

    def registered(self) -> Mapping[str, T]:
        """What is registered so far, without discovery (for decorators while modules load)."""
        return self._entries

    def load(self) -> Registry[T]:
        """Import the registering modules, once per process (later calls return at once).
        Another thread reading meanwhile waits for the whole list; a module that reads the
        registry while it loads sees the entries registered so far."""
        if self._loaded:
            return self
        with self._lock:
            if self._loaded or self._loading:
                return self
            self._loading = True
            try:
                for module in self.modules:
                    importlib.import_module(module)
                self._loaded = True
            finally:
                self._loading = False
        return self

    def load_only(self, modules: Iterable[str]) -> Mapping[str, T]:
        """Import just these of the registering modules (each once), not the whole list, and
        give what is registered so far without discovery: a one-shot audit imports the checks
        its rules name and its engine's probes only (startup cost). Reading the registry
        itself later still imports the rest. Once they are imported (every daemon cycle
        after the first), a set lookup per module."""
        if self._loaded:
            return self._entries
        todo = [m for m in modules if m not in self._imported]
        if todo:
            with self._lock:
                for module in todo:
                    if module not in self.modules:
                        raise ValueError(f"{module} is not a module registering {self.kind}s")
                    importlib.import_module(module)
                    self._imported.add(module)
        return self._entries

    @property
    def loaded(self) -> bool:
        """Every module of the list imported (read without triggering discovery)."""
        return self._loaded

    # the reads a cycle makes (a probe, a check, a section per name): no discovery call once
    # loaded, a plain dict read
    def __getitem__(self, name: str) -> T:
        if not self._loaded:
            self.load()
        return self._entries[name]

    @overload
    def get(self, name: str, /) -> T | None: ...

    @overload
    def get(self, name: str, /, default: T | D) -> T | D: ...

    def get(self, name: str, /, default: object = None) -> object:
        if not self._loaded:
            self.load()
        return self._entries.get(name, default)

    def __contains__(self, name: object) -> bool:
        if not self._loaded:
            self.load()
        return name in self._entries

    def __setitem__(self, name: str, entry: T) -> None:
        """Replace a registered entry (tests: `monkeypatch.setitem`); never adds one."""
        self.load().replace(name, entry)

    def __iter__(self) -> Iterator[str]:
        return iter(self.load()._entries)

    def __len__(self) -> int:
        return len(self.load()._entries)

    def __repr__(self) -> str:
        state = "loaded" if self._loaded else "not loaded"
        return f"Registry({self.kind!r}, {len(self._entries)} entries, {state})"
