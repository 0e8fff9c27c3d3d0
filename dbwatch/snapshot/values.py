"""Narrowing driver values to Python types at the probe boundary.

A driver row is a mapping of column name to `object`: nothing downstream sees `Any`.
These helpers turn one value into the type a row's field declares, tolerating what
drivers and JSON give (Decimal, bytes, text numbers, datetimes); a value of the wrong
kind becomes None rather than a wrong number.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, is_dataclass
from datetime import datetime
from decimal import Decimal
from typing import ClassVar, Self, TypeAlias, TypeVar, cast, get_type_hints

from ..frozen import frozen

# JSON as it leaves dbwatch (evidence, state, webhooks): recursive, never Any.
JSON: TypeAlias = "str | int | float | bool | None | list[JSON] | dict[str, JSON]"
JSONObject: TypeAlias = "dict[str, JSON]"
Row: TypeAlias = Mapping[str, object]
Number: TypeAlias = int | float


def opt_int(v: object) -> int | None:
    if v is None:
        return None
    if isinstance(v, int):  # bool included: True is 1
        return v
    if isinstance(v, (float, Decimal)):
        return int(v)
    if isinstance(v, (str, bytes)):
        try:
            return int(float(v))
        except ValueError:
            return None
    return None


def opt_float(v: object) -> float | None:
    if v is None:
        return None
    if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, (str, bytes)):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def opt_str(v: object) -> str | None:
    """Text: bytes decoded (replacing what is not UTF-8), timestamps as ISO 8601."""
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "replace")
    if isinstance(v, datetime):
        return v.isoformat()
    if isinstance(v, Decimal):
        return str(int(v)) if v == int(v) else str(v)
    return str(v)


def opt_num(v: object) -> Number | None:
    """A count or a number of seconds as the server gave it: ints stay ints (TIME,
    TIMESTAMPDIFF), fractions stay floats; Decimals and text become either."""
    if v is None:
        return None
    if isinstance(v, (int, float)):  # bool included: True is 1
        return int(v) if isinstance(v, bool) else v
    if isinstance(v, Decimal):
        return int(v) if v == int(v) else float(v)
    if isinstance(v, (str, bytes)):
        text = opt_str(v) or ""
        for parse in (int, float):
            try:
                return parse(text)
            except ValueError:
                continue
    return None


def opt_datetime(v: object) -> datetime | None:
    """A timestamp as the driver gives it, or as stored in JSON/YAML (ISO text); else None."""
    if v is None or isinstance(v, datetime):
        return v
    try:
        return datetime.fromisoformat(to_str(v))
    except ValueError:
        return None


def iso(v: datetime | None) -> str | None:
    """A typed timestamp as the text dbwatch writes (evidence, identity lists): ISO 8601."""
    return None if v is None else v.isoformat()


def to_str(v: object, default: str = "") -> str:
    s = opt_str(v)
    return default if s is None else s


def to_int(v: object, default: int = 0) -> int:
    i = opt_int(v)
    return default if i is None else i


def to_float(v: object, default: float = 0.0) -> float:
    f = opt_float(v)
    return default if f is None else f


def opt_bool(v: object) -> bool | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float, Decimal)):
        return bool(v)
    if isinstance(v, (str, bytes)):
        t = opt_str(v)
        return (t or "").strip().lower() in ("1", "t", "true", "on", "yes", "y")
    return bool(v)


def to_bool(v: object) -> bool:
    return bool(opt_bool(v))


def int_list(v: object) -> tuple[int, ...]:
    """An int[] column (pg_blocking_pids) or its text form '{1,2}'."""
    if v is None:
        return ()
    if isinstance(v, str):
        v = [p for p in v.strip("{}").split(",") if p.strip()]
    if isinstance(v, Sequence) and not isinstance(v, (bytes, bytearray)):
        return tuple(i for i in (opt_int(x) for x in v) if i is not None)
    return ()


def str_list(v: object) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        return (v,)
    if isinstance(v, Sequence) and not isinstance(v, (bytes, bytearray)):
        return tuple(to_str(x) for x in v)
    return ()


def lower_keys(row: Mapping[object, object]) -> dict[str, object]:
    """MySQL's information_schema answers in upper case: one spelling for the builders."""
    return {str(k).lower(): v for k, v in row.items()}


def as_row(v: object) -> Row:
    """A mapping from a driver or a test's YAML; anything else is an empty row."""
    if isinstance(v, Mapping):
        return lower_keys(v)
    return {}


def as_rows(v: object) -> list[Row]:
    if v is None or isinstance(v, (str, bytes, Mapping)):
        return []
    if isinstance(v, Sequence):
        return [as_row(r) for r in v]
    return []


def as_json(v: object) -> JSON:
    """A value made JSON-safe (evidence): datetimes and bytes as text, Decimals as numbers,
    tuples as lists, dataclass rows by their to_json()."""
    if v is None or isinstance(v, (str, bool, int, float)):
        return v
    if isinstance(v, Decimal):
        return int(v) if v == int(v) else float(v)
    if isinstance(v, (bytes, bytearray, datetime)):
        return opt_str(v)
    if isinstance(v, Mapping):
        return {str(k): as_json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [as_json(x) for x in v]
    to_json = getattr(v, "to_json", None)
    if callable(to_json):
        out: JSON = to_json()
        return out
    return str(v)


# ---------------------------------------------------------------- typed rows from driver rows

Convert: TypeAlias = Callable[[object], object]

# A field's annotation -> the helper that narrows its column's value. Nothing else is
# guessed: a field of any other type says how it is read (`Read`).
BY_ANNOTATION: Mapping[object, Convert] = {
    int: to_int,
    int | None: opt_int,
    float: to_float,
    float | None: opt_float,
    str: to_str,
    str | None: opt_str,
    datetime | None: opt_datetime,
    bool: to_bool,
    bool | None: opt_bool,
    tuple[int, ...]: int_list,
    tuple[str, ...]: str_list,
}


@frozen
class Read:
    """How one field of a `TypedRow` is read when not from the column of its name through
    the helper its annotation picks: from another `column`, through another `convert`,
    or `compute`d from the whole row (a fallback to another column, several columns)."""

    column: str | None = None
    convert: Convert | None = None
    compute: Callable[[Row], object] | None = None

    def __post_init__(self) -> None:
        if self.compute is not None and (self.column is not None or self.convert is not None):
            raise TypeError("Read: compute reads the whole row; no column or convert with it")


# One field's reading: its column and helper, or (computed) a function of the whole row.
_Step: TypeAlias = tuple[str, Convert, Callable[[Row], object] | None]


def _computed_only(v: object) -> object:
    raise AssertionError("a computed field reads no column")


_PLANS: dict[type[TypedRow], tuple[_Step, ...]] = {}


def _init_fields(cls: type) -> list[str]:
    # `cls: type`, not type[TypedRow]: is_dataclass narrows a plain type only (on
    # type[TypedRow] mypy would take what follows the check for unreachable, unchecked).
    if not is_dataclass(cls):
        raise TypeError(f"{cls.__name__}: a TypedRow is a dataclass")
    return [f.name for f in fields(cls) if f.init]


# BY_ANNOTATION's types as annotations write them: a field so written is read without
# evaluating its annotation (get_type_hints compiles and evaluates every annotation of the
# class and its bases, ~0.1 ms each, at the first row of each class). Each text's names:
# None for a builtin (which neither the declaring class nor its module may bind), else the
# object the module must bind it to.
_BY_TEXT: dict[str, tuple[Convert, dict[str, object]]] = {
    "int": (to_int, {"int": None}),
    "int | None": (opt_int, {"int": None}),
    "float": (to_float, {"float": None}),
    "float | None": (opt_float, {"float": None}),
    "str": (to_str, {"str": None}),
    "str | None": (opt_str, {"str": None}),
    "datetime | None": (opt_datetime, {"datetime": datetime}),
    "bool": (to_bool, {"bool": None}),
    "bool | None": (opt_bool, {"bool": None}),
    "tuple[int, ...]": (int_list, {"tuple": None, "int": None}),
    "tuple[str, ...]": (str_list, {"tuple": None, "str": None}),
}
_UNBOUND = object()


def _by_text(cls: type, name: str) -> Convert | None:
    """The helper for field `name` from its annotation's text, when that is one of _BY_TEXT's
    and its names mean what they mean there (get_type_hints looks them up in the class
    declaring the field, then its module, then the builtins), else None."""
    for base in cls.__mro__:
        notes = inspect.get_annotations(base)
        if name in notes:  # the most derived annotation, as get_type_hints takes it
            text = notes[name]
            hit = _BY_TEXT.get(text) if isinstance(text, str) else None
            if hit is None:
                return None
            module = sys.modules.get(base.__module__)
            names = module.__dict__ if module is not None else {}
            for word, meant in hit[1].items():
                if word in base.__dict__ or names.get(word, _UNBOUND) is not (meant or _UNBOUND):
                    return None
            return hit[0]
    return None


def _plan(cls: type[TypedRow]) -> tuple[_Step, ...]:
    """The class's reading, worked out once: a step per __init__ parameter, in order."""
    names = _init_fields(cls)
    reads = cls._reads
    hints: Mapping[str, object] | None = None  # get_type_hints, only for another annotation
    if unknown := set(reads) - set(names):
        raise TypeError(f"{cls.__name__}: Read for no field: {sorted(unknown)}")
    steps: list[_Step] = []
    for name in names:
        read = reads.get(name, Read())
        if read.compute is not None:
            steps.append(("", _computed_only, read.compute))
            continue
        convert = read.convert or _by_text(cls, name)
        if convert is None:
            hints = get_type_hints(cls) if hints is None else hints
            convert = BY_ANNOTATION.get(hints[name])
        if convert is None:
            assert hints is not None
            raise TypeError(
                f"{cls.__name__}.{name}: no helper for {hints[name]!r}; say how it is read (Read)"
            )
        steps.append((read.column or name, convert, None))
    plan = _PLANS[cls] = tuple(steps)
    return plan


class TypedRow:
    """Base of a frozen row dataclass built from a driver row (or a test's YAML) field by
    field: column `name` for field `name`, narrowed by the helper the field's annotation
    picks (BY_ANNOTATION); the exceptions are given once, in the class statement:
    `class X(TypedRow, host=Read(compute=...))`. The reading is worked out on first use
    and kept; a field no helper fits and no Read covers is a TypeError then."""

    _reads: ClassVar[Mapping[str, Read]] = {}

    def __init_subclass__(cls, **reads: Read) -> None:
        super().__init_subclass__()
        cls._reads = reads

    @classmethod
    def from_row(cls, row: Row) -> Self:
        get = row.get
        args = [
            convert(get(column)) if compute is None else compute(row)
            for column, convert, compute in _PLANS.get(cls) or _plan(cls)
        ]
        # The plan holds one value per __init__ parameter, in order, each narrowed to its
        # field's annotation (or as the class's Read says): the dataclass's generated
        # __init__ accepts them, which this base class cannot spell for mypy.
        make = cast(Callable[..., Self], cls)
        return make(*args)


TR = TypeVar("TR", bound=TypedRow)


def built(cls: type[TR]) -> Callable[[object], tuple[TR, ...]]:
    """A Read.convert for a column of nested rows: each one built by cls.from_row."""

    def convert(v: object) -> tuple[TR, ...]:
        return tuple(cls.from_row(r) for r in as_rows(v))

    return convert
