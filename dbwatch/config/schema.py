"""The config's schema is its dataclasses: how a dataclass is read from a TOML table.

Each field is one TOML key of the same name; its type says how the value is read:

    str, bool, int (>= 0), Duration ("15s", "1h30m" or seconds), tuple[str, ...],
    X | None (absent: None), a dataclass ([key] table), tuple[DC, ...] ([[key]] array of
    tables), dict[str, DC] ([key.ID] table of tables).

`spec(...)` in a field's metadata says what the type cannot: another key name, a default that
depends on the table's place, "" meaning the default, a check of the value read, a reader of its
own, or a field derived from the table rather than read from a key. Every problem is collected
as "file: key: problem"; a bad value reads as the default, so the rest is still checked.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import MISSING as NO_DEFAULT
from dataclasses import Field, field, fields, is_dataclass
from functools import cache
from typing import (
    TYPE_CHECKING,
    Annotated,
    TypeVar,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from ..catalogue import Rule
from ..durations import parse_duration
from ..frozen import frozen, mutable

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

DURATION = "duration"
Duration = Annotated[float, DURATION]  # read by parse_duration; a float field must say so
Table = dict[str, object]
ENTRY = "ID"  # how the name of a dict[str, DC] entry is shown: [rules.ID]
_T = TypeVar("_T")


class _Missing:
    """Absent, or not readable (the problem already recorded)."""


MISSING = _Missing()


def as_table(value: object) -> Table | None:
    """A TOML table as a str-keyed dict; None if the value is not a table."""
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else None


def dotted(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


class Collector:
    """The problems found so far ("file: key: problem"), and what readers may need."""

    def __init__(self, file: str, catalogue: Mapping[str, Rule] | None = None) -> None:
        self.file = file
        self.catalogue = catalogue
        self.problems: list[str] = []

    def err(self, key: str, msg: str) -> None:
        self.problems.append(f"{self.file}: {key}: {msg}")


@frozen
class Spec:
    """What a field's type does not say (see the module docstring)."""

    key: str | None = None  # the TOML key; default: the field's name
    default: Callable[[At], object] | None = None  # a default computed from the place
    blank: bool = False  # "" reads as the default
    check: Callable[[object, At], None] | None = None  # on the value read, or the default
    read: Callable[[At], object] | None = None  # reads the key itself
    derived: bool = False  # no key of its own: `read` computes it from the table
    entry: Callable[[str, Collector], str | None] | None = None  # dict[str, DC]: a bad name


SPEC = "dbwatch.config"


def spec(
    *,
    key: str | None = None,
    default: Callable[[At], object] | None = None,
    blank: bool = False,
    check: Callable[[object, At], None] | None = None,
    read: Callable[[At], object] | None = None,
    derived: bool = False,
    entry: Callable[[str, Collector], str | None] | None = None,
) -> dict[str, Spec]:
    """A field's metadata: field(default=…, metadata=spec(check=…))."""
    return {SPEC: Spec(key, default, blank, check, read, derived, entry)}


@frozen
class Slot:
    """One field as the reader sees it."""

    name: str  # the field's name
    key: str | None  # its TOML key (None: derived)
    kind: str  # str bool int duration strlist table array tables custom (its own reader)
    of: type[DataclassInstance] | None  # the dataclass of a table, array or tables
    optional: bool  # X | None
    default: Callable[[], object] | None  # the field's own default
    spec: Spec


_SCALARS = {str: "str", bool: "bool", int: "int"}


def _kind(hint: object) -> tuple[str, type[DataclassInstance] | None, bool]:
    """How a type hint is read: (kind, dataclass, optional)."""
    args = get_args(hint)
    optional = get_origin(hint) in (Union, types.UnionType) and type(None) in args
    if optional:
        (hint,) = [a for a in args if a is not type(None)]
        args = get_args(hint)
    origin = get_origin(hint)
    if origin is Annotated and DURATION in getattr(hint, "__metadata__", ()):
        return DURATION, None, optional
    if hint in _SCALARS:
        return _SCALARS[hint], None, optional
    if origin is tuple and args == (str, ...):
        return "strlist", None, optional
    if isinstance(hint, type) and is_dataclass(hint):
        return "table", hint, optional
    if origin is tuple and len(args) == 2 and args[1] is ... and _dc(args[0]):
        return "array", args[0], optional
    if origin is dict and len(args) == 2 and args[0] is str and _dc(args[1]):
        return "tables", args[1], optional
    return "custom", None, optional


def _dc(hint: object) -> bool:
    return isinstance(hint, type) and is_dataclass(hint)


@cache
def slots(cls: type[DataclassInstance]) -> tuple[Slot, ...]:
    """The fields of a config dataclass as TOML keys (a type no reader knows is an error)."""
    hints = get_type_hints(cls, include_extras=True)
    out = []
    for f in fields(cls):
        s = f.metadata.get(SPEC, Spec())
        kind, of, optional = _kind(hints[f.name])
        if kind == "custom" and s.read is None:
            raise TypeError(f"{cls.__name__}.{f.name}: no reader for {hints[f.name]!r}")
        default = _field_default(f, optional)
        if default is None and s.default is None and s.read is None:
            raise TypeError(f"{cls.__name__}.{f.name}: no default")
        key = None if s.derived else (s.key or f.name)
        out.append(Slot(f.name, key, kind, of, optional, default, s))
    return tuple(out)


def _field_default(f: Field[object], optional: bool) -> Callable[[], object] | None:
    """The field's own default as a function (None if it has none)."""
    if f.default is not NO_DEFAULT:
        value = f.default
        return lambda: value
    if f.default_factory is not NO_DEFAULT:
        return f.default_factory
    return (lambda: None) if optional else None


@mutable
class At:
    """One key being read: its table, its place, and the fields read before it."""

    col: Collector
    slot: Slot
    table: Table  # the table holding the key
    where: str  # the table's path: "" at the top, "targets[0]", "rules.PG001"
    values: dict[str, object]  # the fields of this table read so far
    index: int = 0  # the table's place in its array of tables
    entry: str = ""  # the table's name in its table of tables (a rule ID)
    siblings: tuple[dict[str, object], ...] = field(default=())  # the array's earlier tables

    @property
    def path(self) -> str:
        return dotted(self.where, self.slot.key or self.slot.name)

    @property
    def present(self) -> bool:
        return self.slot.key is not None and self.slot.key in self.table

    @property
    def raw(self) -> object:
        return self.table.get(self.slot.key, MISSING) if self.slot.key else MISSING

    def err(self, msg: str, key: str | None = None) -> None:
        """A problem with this key (or with another `key` of the same table)."""
        self.col.err(dotted(self.where, key) if key else self.path, msg)

    def default(self) -> object:
        if self.slot.spec.default is not None:
            return self.slot.spec.default(self)
        assert self.slot.default is not None  # slots() made sure
        return self.slot.default()

    def value(self, default: object) -> object:
        """The key's value read as its type; `default` if absent or bad (the problem said)."""
        if not self.present:
            return default
        value = _typed(self)
        return default if value is MISSING else value


def _typed(at: At) -> object:
    """The present value converted to the field's type, or MISSING (the problem recorded)."""
    slot, raw = at.slot, at.raw
    convert = _CONVERT.get(slot.kind)
    if convert is not None:
        try:
            return convert(raw)
        except (ValueError, TypeError) as exc:
            at.err(str(exc))
            return MISSING
    assert slot.of is not None, slot
    if slot.kind == "table":
        table = as_table(raw)
        if table is None:
            at.err("must be a table")
            return MISSING
        return build(slot.of, read_values(slot.of, table, at.path, at.col))
    if slot.kind == "array":
        return _array(slot.of, raw, at)
    return _tables(slot.of, raw, at)


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    return value


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {value!r}")
    return value


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"expected a non-negative integer, got {value!r}")
    return value


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"expected a list of strings, got {value!r}")
    return tuple(str(v) for v in value)


_CONVERT: dict[str, Callable[[object], object]] = {
    "str": _string,
    "bool": _flag,
    "int": _count,
    DURATION: parse_duration,
    "strlist": _strings,
}


def _array(of: type[DataclassInstance], raw: object, at: At) -> object:
    """[[key]]: a table per item; an item that is not a table is skipped."""
    if not isinstance(raw, list):
        at.err(f"must be an array of tables ([[{at.path}]])")
        return MISSING
    done: list[dict[str, object]] = []
    for i, item in enumerate(raw):
        where = f"{at.path}[{i}]"
        table = as_table(item)
        if table is None:
            at.col.err(where, "must be a table")
            continue
        done.append(read_values(of, table, where, at.col, index=i, siblings=tuple(done)))
    return tuple(build(of, values) for values in done)


def _tables(of: type[DataclassInstance], raw: object, at: At) -> object:
    """[key.ID]: a table per name; a bad name or a non-table is skipped."""
    tables = as_table(raw)
    if tables is None:
        at.err(f"must be a table of [{at.path}.{ENTRY}] tables")
        return MISSING
    out = {}
    for name, item in tables.items():
        where = f"{at.path}.{name}"
        bad = at.slot.spec.entry(name, at.col) if at.slot.spec.entry else None
        table = as_table(item)
        if bad or table is None:
            at.col.err(where, bad or "must be a table")
            continue
        out[name] = build(of, read_values(of, table, where, at.col, entry=name))
    return out


def keys(cls: type[DataclassInstance]) -> tuple[str, ...]:
    """The TOML keys a table of this dataclass may hold."""
    return tuple(s.key for s in slots(cls) if s.key is not None)


def unknown_keys(cls: type[DataclassInstance], table: Table, where: str, col: Collector) -> None:
    allowed = keys(cls)
    for key in table:
        if key not in allowed:
            col.err(dotted(where, key), "unknown key")


def read_values(
    cls: type[DataclassInstance],
    table: Table,
    where: str,
    col: Collector,
    *,
    index: int = 0,
    entry: str = "",
    siblings: tuple[dict[str, object], ...] = (),
    unknown: bool = True,
) -> dict[str, object]:
    """Every field of `cls` read from `table`, in the order of the fields."""
    if unknown:
        unknown_keys(cls, table, where, col)
    values: dict[str, object] = {}
    for slot in slots(cls):
        at = At(col, slot, table, where, values, index, entry, siblings)
        values[slot.name] = _read(at)
    return values


def _read(at: At) -> object:
    s = at.slot.spec
    if s.read is not None:
        return s.read(at)
    value = MISSING if not at.present or (s.blank and at.raw == "") else _typed(at)
    if value is MISSING:
        value = at.default()
    if s.check is not None:
        s.check(value, at)
    return value


def build(cls: type[_T], values: dict[str, object]) -> _T:
    """The dataclass made of the values read."""
    return cls(**values)


def key_table(cls: type[DataclassInstance], where: str = "") -> list[tuple[str, str, str]]:
    """(table, key, kind) of every key reachable from `cls`: tables as written in TOML
    ("targets" for [[targets]], "rules.ID" for [rules.ID]); the reference the docs follow."""
    out = []
    for s in slots(cls):
        if s.key is None:
            continue
        out.append((where, s.key, s.kind))
        if s.of is not None and s.spec.read is None:
            sub = dotted(where, s.key)
            if s.kind == "tables":
                sub = f"{sub}.{ENTRY}"
            out.extend(key_table(s.of, sub))
    return out
