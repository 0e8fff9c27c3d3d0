"""`@frozen`: `@dataclass(frozen=True)` for a fraction of its class-creation cost (startup);
`@mutable`: `@dataclass` likewise.

The standard decorator compiles six functions per class from generated source (__init__,
__repr__, __eq__, __hash__, __setattr__, __delattr__): ~1 ms a class on the slow machine, and
a one-target audit creates ~90 classes (notes: contrib/bench/bench_startup.py). Here:

- the fields are made as the standard decorator makes them (the same Field objects, class
  defaults, __dataclass_fields__ and __match_args__) without its class processing, which
  was most of what is left of a class's cost (`_fields_of`; a ClassVar or an annotation
  that is no string goes through dataclasses' own per-field function);
- __init__, __eq__, __hash__ are the standard code, compiled on the class's first call of
  each (a class never instantiated, compared or hashed in a run compiles none): the per-row
  cost of a hot path is the standard one's;
- __repr__ (`Class(a=1, b='x')`, "..." on recursion), __setattr__/__delattr__
  (FrozenInstanceError for a field, or any name on this class) are closures over the field
  names, built without the compiler, behaving as the standard ones;
- a class without a docstring gets the standard one (`Class(a: 'int', b: 'str' = 'x')`);
- __dataclass_params__ is the standard decorator's object, made on first read.

`dataclasses.fields`, `replace`, `asdict`, `is_dataclass`, `__match_args__`, pickling and
inspect.signature work unchanged (the class is a standard dataclass). A class the shortcut
does not cover (a dataclass base, an InitVar, KW_ONLY or kw_only fields, a dunder of its own,
a mutable default, a Python without the dataclasses internals used) gets the standard
decorator. mypy sees `dataclass(frozen=True)` / `dataclass()` (PEP 681 dataclass_transform).
tests/test_frozen.py checks each behaviour, and the fields of a set of class bodies, beside
the standard decorator's.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import reprlib
import sys
import types
import typing
from collections.abc import Callable, Iterable
from types import MethodType
from typing import Any, ClassVar, TypeVar, dataclass_transform

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


class _ParamsOf:
    """A class's __dataclass_params__: the standard decorator's object, made on first read
    (dataclasses reads it from a dataclass base; making it compiles a probe class's methods,
    which a start that never reads it does not need)."""

    __slots__ = ("frozen",)

    def __init__(self, frozen: bool) -> None:
        self.frozen = frozen

    def __get__(self, obj: object, owner: type | None = None) -> object:
        return _params(self.frozen)


_PARAMS_OF = {True: _ParamsOf(True), False: _ParamsOf(False)}


# dataclasses' own pieces the field processing below uses (private names: without any of
# them, every class gets the standard decorator)
_FIELD = getattr(dataclasses, "_FIELD", None)
_CLASSVAR = getattr(dataclasses, "_FIELD_CLASSVAR", None)
_INITVAR = getattr(dataclasses, "_FIELD_INITVAR", None)
_GET_FIELD = getattr(dataclasses, "_get_field", None)
_IDENT = getattr(getattr(dataclasses, "_MODULE_IDENTIFIER_RE", None), "match", None)
_FIELD_TYPE = "_field_type"


def _fields_of(cls: type) -> tuple[dataclasses.Field[Any], ...] | None:
    """What `dataclass(init=False, repr=False, eq=False)` makes of the class's fields, made
    without it: the same Field objects (one per annotation, in order, ClassVars and
    InitVars kept apart), class defaults, __dataclass_fields__ and __match_args__; returned:
    the fields and InitVars, in __init__'s order. None, before changing anything, for what
    the shortcut does not cover: a dataclass base, one of the generated dunders of the
    class's own, a KW_ONLY or kw_only field, a field named self, a Field without an
    annotation, a mutable or slot default, an InitVar with a factory (the standard
    decorator then decides and errs as it does). A string annotation is a ClassVar, InitVar
    or KW_ONLY as dataclasses judges it (the module's name for it); any other annotation
    goes through dataclasses' own per-field function."""
    if _GET_FIELD is None or _IDENT is None or None in (_FIELD, _CLASSVAR, _INITVAR):
        return None
    own = cls.__dict__
    if hasattr(cls, "__dataclass_fields__") or any(name in own for name in _OWN):
        return None
    notes: dict[str, object] | None = own.get("__annotations__")
    if notes is None:  # none, or a Python that makes them on first read (PEP 649)
        notes = inspect.get_annotations(cls)
    module = sys.modules.get(cls.__module__)
    ns: dict[str, object] = module.__dict__ if module is not None else {}
    made: list[dataclasses.Field[Any]] = []
    for name, tp in notes.items():
        if name == "self":
            return None
        special, kind = not isinstance(tp, str), _FIELD
        if not special:
            m = _IDENT(tp)
            if m is not None:
                obj, via = ns.get(m.group(2)), m.group(1)
                if obj is not None:
                    if obj is dataclasses.KW_ONLY:
                        if not via or ns.get(via) is dataclasses:
                            return None
                    elif obj is dataclasses.InitVar or type(obj) is dataclasses.InitVar:
                        if not via or ns.get(via) is dataclasses:
                            kind = _INITVAR
                    elif obj is ClassVar or getattr(obj, "__origin__", None) is ClassVar:
                        special = not via or ns.get(via) is typing
        if special:  # a ClassVar, or an annotation that is no string: dataclasses' own way
            if tp is dataclasses.KW_ONLY:
                return None
            got = _GET_FIELD(cls, name, tp, False)
            if got.kw_only is True:
                return None
            made.append(got)
            continue
        default: Any = getattr(cls, name, dataclasses.MISSING)
        if isinstance(default, dataclasses.Field):
            if default.kw_only is True:
                return None
            f = default
        elif isinstance(default, types.MemberDescriptorType):
            return None
        else:
            f = dataclasses.field(default=default)
        if kind is _INITVAR:
            if f.default_factory is not dataclasses.MISSING:
                return None  # the standard decorator's TypeError
        elif f.default is not dataclasses.MISSING and f.default.__class__.__hash__ is None:
            return None  # a mutable default: the standard decorator's ValueError
        f.name, f.type = name, tp
        setattr(f, _FIELD_TYPE, kind)
        if f.kw_only is dataclasses.MISSING:
            f.kw_only = False
        made.append(f)
    if any(isinstance(v, dataclasses.Field) and n not in notes for n, v in own.items()):
        return None  # a field without a type annotation: the standard decorator's TypeError
    table = {}
    for f in made:
        table[f.name] = f
        if isinstance(getattr(cls, f.name, None), dataclasses.Field):
            if f.default is dataclasses.MISSING:
                delattr(cls, f.name)
            else:
                setattr(cls, f.name, f.default)
    cls.__dataclass_fields__ = table  # type: ignore[attr-defined]
    fields = tuple(f for f in made if getattr(f, _FIELD_TYPE) in (_FIELD, _INITVAR))
    if "__match_args__" not in own:
        setattr(cls, "__match_args__", tuple(f.name for f in fields if f.init))  # noqa: B010 - mypy
    abc.update_abstractmethods(cls)
    return fields


def _init_fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    """A class's fields and InitVars, in __init__'s order (as _fields_of returned them)."""
    every: dict[str, dataclasses.Field[Any]] = cls.__dict__["__dataclass_fields__"]
    return tuple(f for f in every.values() if getattr(f, _FIELD_TYPE) in (_FIELD, _INITVAR))


_Source = tuple[str, list[str], dict[str, object]]  # head, body lines, the names bound


def _init(
    cls: type, fields: tuple[dataclasses.Field[Any], ...], frozen: bool
) -> Callable[..., None]:
    """The standard __init__ (same parameters, defaults, factories, annotations and
    __post_init__ call), compiled once."""
    return _compiled(*_init_source(cls, fields, frozen))


def _init_source(cls: type, fields: tuple[dataclasses.Field[Any], ...], frozen: bool) -> _Source:
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
        if getattr(f, _FIELD_TYPE) is _INITVAR:
            continue  # a parameter only: passed to __post_init__
        if frozen:
            lines.append(f"  __dataclass_setattr__(self,{f.name!r},{value})")
        else:
            lines.append(f"  self.{f.name}={value}")
    if hasattr(cls, "__post_init__"):
        initvars = ",".join(f.name for f in fields if getattr(f, _FIELD_TYPE) is _INITVAR)
        lines.append(f"  self.__post_init__({initvars})")
    head = f"def __init__(self, {', '.join(params)}) -> __dataclass_return_type__:"
    return head, lines or ["  pass"], local


def _source(head: str, body: list[str], local: dict[str, object]) -> str:
    """The text of a function making the method: the names in `local` are its parameters
    (bound as the standard decorator binds them: arguments of an enclosing function)."""
    src = f"def __create_fn__({', '.join(local)}):\n {head}\n" + "\n".join(body)
    return src + f"\n return {head[4 : head.index('(')]}"


_AHEAD: dict[str, Callable[..., Any]] | None = None  # frozen_code.CODE, loaded on first use


def _ahead() -> dict[str, Callable[..., Any]]:
    global _AHEAD
    if _AHEAD is None:
        try:
            from . import frozen_code
        except ImportError:  # not generated (a partial checkout): everything is compiled
            _AHEAD = {}
        else:
            _AHEAD = typing.cast(dict[str, Callable[..., Any]], frozen_code.CODE)
    return _AHEAD


def _compiled(head: str, body: list[str], local: dict[str, object]) -> Callable[..., Any]:
    """One function from its source, the names in `local` bound as the standard decorator
    binds them. The source's function comes compiled ahead from dbwatch/frozen_code.py when
    that holds this exact text (its .pyc: no compiler at run time), else it is compiled."""
    src = _source(head, body, local)
    ahead = _ahead().get(src)
    if ahead is not None:
        made_ahead: Callable[..., Any] = ahead(**local)
        return made_ahead
    ns: dict[str, Any] = {}
    # dont_inherit: this module's `from __future__ import annotations` would make the
    # parameters' annotations the local names instead of the field types
    exec(compile(src, "<dataclass>", "exec", dont_inherit=True), {}, ns)  # noqa: S102 - source generated from the class's own field names
    made: Callable[..., Any] = ns["__create_fn__"](**local)
    return made


def _eq(fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., Any]:
    """The standard __eq__: the same class, the compare=True fields equal as a tuple."""
    return _compiled(*_eq_source(fields))


def _eq_source(fields: tuple[dataclasses.Field[Any], ...]) -> _Source:
    names = [f.name for f in fields if f.compare]
    mine, theirs = "".join(f"self.{n}," for n in names), "".join(f"other.{n}," for n in names)
    return (
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
    return _compiled(*_hash_source(fields))


def _hash_source(fields: tuple[dataclasses.Field[Any], ...]) -> _Source:
    names = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
    mine = "".join(f"self.{n}," for n in names)
    return "def __hash__(self):", [f"  return hash(({mine}))"], {}


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
    every = fields  # with the InitVars: __init__'s parameters
    fields = tuple(f for f in every if getattr(f, _FIELD_TYPE) is _FIELD)
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
        "__init__": _Lazy(cls, "__init__", lambda: _init(cls, every, frozen)),
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
    fields = _fields_of(cls)
    if fields is None:
        return dataclasses.dataclass(frozen=frozen)(cls)
    _check_order(fields)
    for name, fn in _methods(cls, fields, frozen).items():
        if not isinstance(fn, _Lazy):
            fn.__qualname__ = f"{cls.__qualname__}.{name}"  # type: ignore[attr-defined]
        setattr(cls, name, fn)
    if not frozen:
        cls.__hash__ = None  # type: ignore[assignment]  # eq without frozen: unhashable
    cls.__dataclass_params__ = _PARAMS_OF[frozen]  # type: ignore[attr-defined]
    if not cls.__dict__.get("__doc__"):  # the standard one, written from the fields
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


def code_source(modules: Iterable[str]) -> str:
    """dbwatch/frozen_code.py: the __init__, __eq__ and __hash__ sources of every class made
    by @frozen/@mutable in `modules` (each imported; a class made inside a function is not
    reached and compiles at run time), each as a function of its own keyed by its text.
    Written by contrib/frozen_code.py, which lists dbwatch's modules."""
    import importlib

    names = sorted(set(modules))
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional dependency missing here: its classes compile
            continue
    texts: set[str] = set()
    for name in names:
        module = sys.modules.get(name)
        if module is None:
            continue
        for cls in _classes(vars(module), name):
            fields = dataclasses.fields(cls)
            frozen = cls.__dict__["__dataclass_params__"].frozen
            texts.add(_source(*_init_source(cls, _init_fields(cls), frozen)))
            texts.add(_source(*_eq_source(fields)))
            if frozen:
                texts.add(_source(*_hash_source(fields)))
    out = [
        '"""The methods @frozen/@mutable make (dbwatch/frozen.py), compiled ahead: generated by',
        "dbwatch.frozen.code_source (`python contrib/frozen_code.py`) after a change of a",
        "class's fields or a new class (tests/test_frozen.py fails until then; a text",
        "not here is compiled at run time). No `from __future__ import annotations`: the",
        '__init__ parameters\' annotations are the field types, as the standard decorator\'s."""',
        "",
        "# fmt: off",
        "# mypy: ignore-errors",
        "# ruff: noqa",
    ]
    keys = []
    for i, text in enumerate(sorted(texts)):
        out += ["", "", text.replace("def __create_fn__(", f"def _c{i}(", 1)]
        keys.append(f"    {text!r}: _c{i},")
    out += ["", "", "CODE = {", *keys, "}", ""]
    return "\n".join(out)


def _classes(names: dict[str, object], module: str, seen: set[type] | None = None) -> list[type]:
    """The classes made by @frozen/@mutable in a module's namespace (and nested in them)."""
    seen = set() if seen is None else seen
    out = []
    for value in names.values():
        if not isinstance(value, type) or value.__module__ != module or value in seen:
            continue
        seen.add(value)
        if isinstance(value.__dict__.get("__dataclass_params__"), _ParamsOf):
            out.append(value)
        out.extend(_classes(dict(vars(value)), module, seen))
    return out
