"""`@frozen`: `@dataclass(frozen=True)` for a fraction of its class-creation cost (startup);
`@mutable`: `@dataclass` likewise.

The standard decorator compiles six functions per class from generated source (__init__,
__repr__, __eq__, __hash__, __setattr__, __delattr__): ~1 ms a class on the slow machine, and
a one-target audit creates ~90 classes (notes: contrib/bench/bench_startup.py). Here the
standard `dataclass` processes the fields (no method generated: no compiler), and:

- __init__, __eq__, __hash__ are the standard code, compiled on the class's first call of
  each (a class never instantiated, compared or hashed in a run compiles none): the per-row
  cost of a hot path is the standard one's;
- __repr__ (`Class(a=1, b='x')`, "..." on recursion), __setattr__/__delattr__
  (FrozenInstanceError for a field, or any name on this class) are closures over the field
  names, built without the compiler, behaving as the standard ones;
- a class without a docstring gets the standard one (`Class(a: 'int', b: 'str' = 'x')`).

`dataclasses.fields`, `replace`, `asdict`, `is_dataclass`, `__match_args__`, pickling and
inspect.signature work unchanged (the class is a standard dataclass; its
`__dataclass_params__` says what the standard decorator's would). A class the shortcut does
not cover (a dataclass base, an InitVar, kw_only fields, a dunder of its own) gets the
standard decorator. mypy sees `dataclass(frozen=True)` / `dataclass()` (PEP 681
dataclass_transform). tests/test_frozen.py checks each behaviour beside the standard one.
"""

from __future__ import annotations

import dataclasses
import inspect
import reprlib
from collections.abc import Callable
from types import MethodType
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")

_OWN = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__slots__")


class _Sentinel:
    """The marker of a default_factory parameter in a generated __init__."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Sentinel()
_PARAMS: dict[bool, object] = {}  # frozen -> the standard __dataclass_params__ (on first use)


def _params(frozen: bool) -> object:
    if frozen not in _PARAMS:
        probe: Any = dataclasses.dataclass(frozen=frozen)(type("_Probe", (), {}))
        _PARAMS[frozen] = probe.__dataclass_params__
    return _PARAMS[frozen]


def _covered(cls: type) -> bool:
    """What the shortcut makes as the standard decorator would: no dataclass base (its
    frozen-ness and fields), none of the generated dunders of the class's own, no InitVar,
    KW_ONLY or kw_only field, no field named self."""
    if any(name in cls.__dict__ for name in _OWN):
        return False
    if any(dataclasses.is_dataclass(base) for base in cls.__mro__[1:]):
        return False
    notes = inspect.get_annotations(cls)  # the class's own
    if "self" in notes or any("InitVar" in str(t) or "KW_ONLY" in str(t) for t in notes.values()):
        return False
    return not any(
        isinstance(v, dataclasses.Field) and v.kw_only is True
        for v in (cls.__dict__.get(n) for n in notes)
    )


def _init(
    cls: type, fields: tuple[dataclasses.Field[Any], ...], frozen: bool
) -> Callable[..., None]:
    """The standard __init__ (same parameters, defaults, factories, annotations and
    __post_init__ call), compiled once."""
    local: dict[str, object] = {
        "__dataclass_setattr__": object.__setattr__,
        "__dataclass_HAS_DEFAULT_FACTORY__": _FACTORY,
        "__dataclass_return_type__": None,
    }
    params: list[str] = []
    lines: list[str] = []
    seen_default = False
    for f in fields:
        local[f"__dataclass_type_{f.name}__"] = f.type
        dflt = f"__dataclass_dflt_{f.name}__"
        has_factory = f.default_factory is not dataclasses.MISSING
        if has_factory:
            local[dflt] = f.default_factory
        elif f.default is not dataclasses.MISSING:
            local[dflt] = f.default
        if f.init:
            if has_factory:
                params.append(
                    f"{f.name}:__dataclass_type_{f.name}__=__dataclass_HAS_DEFAULT_FACTORY__"
                )
                value = f"{dflt}() if {f.name} is __dataclass_HAS_DEFAULT_FACTORY__ else {f.name}"
                seen_default = True
            elif f.default is not dataclasses.MISSING:
                params.append(f"{f.name}:__dataclass_type_{f.name}__={dflt}")
                value = f.name
                seen_default = True
            else:
                if seen_default:
                    raise TypeError(f"non-default argument {f.name!r} follows default argument")
                params.append(f"{f.name}:__dataclass_type_{f.name}__")
                value = f.name
        elif has_factory:
            value = f"{dflt}()"
        else:
            continue  # init=False with a plain default: the class attribute holds it
        if frozen:
            lines.append(f"  __dataclass_setattr__(self,{f.name!r},{value})")
        else:
            lines.append(f"  self.{f.name}={value}")
    if hasattr(cls, "__post_init__"):
        lines.append("  self.__post_init__()")
    head = f"def __init__(self, {', '.join(params)}) -> __dataclass_return_type__:"
    return _compiled(head, lines or ["  pass"], local)


def _compiled(head: str, body: list[str], local: dict[str, object]) -> Callable[..., Any]:
    """One function from its source, the names in `local` bound as the standard decorator
    binds them (arguments of an enclosing function)."""
    src = f"def __create_fn__({', '.join(local)}):\n {head}\n" + "\n".join(body)
    src += f"\n return {head[4 : head.index('(')]}"
    ns: dict[str, Any] = {}
    # dont_inherit: this module's `from __future__ import annotations` would make the
    # parameters' annotations the local names instead of the field types
    exec(compile(src, "<dataclass>", "exec", dont_inherit=True), {}, ns)  # noqa: S102 - source generated from the class's own field names
    made: Callable[..., Any] = ns["__create_fn__"](**local)
    return made


def _eq(fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., Any]:
    """The standard __eq__: the same class, the compare=True fields equal as a tuple."""
    names = [f.name for f in fields if f.compare]
    mine, theirs = "".join(f"self.{n}," for n in names), "".join(f"other.{n}," for n in names)
    return _compiled(
        "def __eq__(self, other):",
        [
            "  if other.__class__ is self.__class__:",
            f"   return ({mine})==({theirs})",
            "  return NotImplemented",
        ],
        {},
    )


def _hash(fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., Any]:
    """The standard __hash__ of a frozen dataclass: the hash of the hashed fields' tuple."""
    names = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
    mine = "".join(f"self.{n}," for n in names)
    return _compiled("def __hash__(self):", [f"  return hash(({mine}))"], {})


def _check_order(fields: tuple[dataclasses.Field[Any], ...]) -> None:
    """The standard decorator's error at class creation (__init__ is compiled on first use)."""
    seen_default = False
    for f in fields:
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")


class _Lazy:
    """A generated method until its first call: then the standard one is compiled (`build`),
    put on the class in its place and called; a class never instantiated (compared, hashed)
    in a run never compiles one. Its signature (inspect.signature of the class or of the
    method) is the real one's."""

    __slots__ = ("build", "cls", "name")

    def __init__(self, cls: type, name: str, build: Callable[[], Callable[..., Any]]) -> None:
        self.cls, self.name, self.build = cls, name, build

    def real(self) -> Callable[..., Any]:
        made = self.cls.__dict__.get(self.name)
        if made is self or made is None:
            made = self.build()
            made.__qualname__ = f"{self.cls.__qualname__}.{self.name}"
            type.__setattr__(self.cls, self.name, made)
        real: Callable[..., Any] = made
        return real

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        return self if obj is None else MethodType(self, obj)

    def __call__(self, obj: object, *args: object, **kwargs: object) -> Any:
        return self.real()(obj, *args, **kwargs)

    @property
    def __signature__(self) -> inspect.Signature:
        return inspect.signature(self.real())


def _methods(
    cls: type[Any], fields: tuple[dataclasses.Field[Any], ...], frozen: bool
) -> dict[str, object]:
    names = frozenset(f.name for f in fields)
    shown = tuple(f.name for f in fields if f.repr)

    @reprlib.recursive_repr()
    def __repr__(self: object) -> str:
        inner = ", ".join([f"{n}={getattr(self, n)!r}" for n in shown])
        return f"{self.__class__.__qualname__}({inner})"

    def __setattr__(self: Any, name: str, value: object) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    made: dict[str, object] = {
        "__init__": _Lazy(cls, "__init__", lambda: _init(cls, fields, frozen)),
        "__repr__": __repr__,
        "__eq__": _Lazy(cls, "__eq__", lambda: _eq(fields)),
    }
    if frozen:
        made.update(
            __hash__=_Lazy(cls, "__hash__", lambda: _hash(fields)),
            __setattr__=__setattr__,
            __delattr__=__delattr__,
        )
    return made


def _make(cls: type[T], frozen: bool) -> type[T]:
    if not _covered(cls):
        return dataclasses.dataclass(frozen=frozen)(cls)
    documented = bool(cls.__dict__.get("__doc__"))
    if not documented:  # the standard decorator would read object.__init__'s signature (slow)
        cls.__doc__ = "-"
    dataclasses.dataclass(init=False, repr=False, eq=False)(cls)  # fields only: no code
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]  # a dataclass from here on
    _check_order(fields)
    for name, fn in _methods(cls, fields, frozen).items():
        if not isinstance(fn, _Lazy):
            fn.__qualname__ = f"{cls.__qualname__}.{name}"  # type: ignore[attr-defined]
        setattr(cls, name, fn)
    if not frozen:
        cls.__hash__ = None  # type: ignore[assignment]  # eq without frozen: unhashable
    cls.__dataclass_params__ = _params(frozen)  # type: ignore[attr-defined]
    if not documented:
        cls.__doc__ = cls.__name__ + _text_signature(fields)
    return cls


def _text_signature(fields: tuple[dataclasses.Field[Any], ...]) -> str:
    """What the standard decorator puts in a class without a docstring, `(a: 'int', b: 'str' =
    'x')` (its __init__'s signature), written from the fields: __init__ is not compiled yet."""
    parts = []
    for f in fields:
        if not f.init:
            continue
        text = f"{f.name}: {inspect.formatannotation(f.type)}"
        if f.default_factory is not dataclasses.MISSING:
            text += f" = {_FACTORY!r}"
        elif f.default is not dataclasses.MISSING:
            text += f" = {f.default!r}"
        parts.append(text)
    return f"({', '.join(parts)})"


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: type[T]) -> type[T]:
    """`@dataclass(frozen=True)`, the same class, made without compiling five of its methods."""
    return _make(cls, frozen=True)


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def mutable(cls: type[T]) -> type[T]:
    """`@dataclass`, the same class, made without compiling its __repr__ and __eq__."""
    return _make(cls, frozen=False)
