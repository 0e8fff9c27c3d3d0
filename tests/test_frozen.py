"""`@frozen` (dbwatch/frozen.py) makes the class `@dataclass(frozen=True)` makes: the same
__init__ signature, defaults and factories, repr, equality, hash, frozen errors, fields,
replace, asdict, pattern matching, pickling and copying — checked side by side with the
standard decorator on the same class body."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import field
from typing import Any, ClassVar, Generic, TypeVar

import pytest

from dbwatch.frozen import frozen, mutable

T = TypeVar("T")


class Base:
    """A plain (non-dataclass) base, as TypedRow is."""

    def hello(self) -> str:
        return "hi"


def body() -> dict[str, Any]:
    """One class body for both decorators (the class statement is made twice)."""

    class Row(Base):
        """A row."""

        kind: ClassVar[str] = "row"
        a: int
        b: str | None = None
        c: tuple[str, ...] = field(default_factory=tuple)
        d: float = field(default=1.5, compare=False)
        e: list[int] = field(default_factory=list, repr=False, hash=False)
        f: int = field(default=7, init=False)
        g: tuple[str, ...] = field(default_factory=lambda: ("x",), init=False)

    return {k: v for k, v in Row.__dict__.items() if k not in ("__dict__", "__weakref__")}


def make(deco: Any, name: str = "Row") -> Any:
    ns = body()
    cls = type(name, (Base,), ns)
    cls.__qualname__ = name
    return deco(cls)


Std = make(dataclasses.dataclass(frozen=True), "Std")  # module names: pickled by reference
Ours = make(frozen, "Ours")
STD, OURS = Std, Ours
MStd = make(dataclasses.dataclass, "MStd")
MOurs = make(mutable, "MOurs")


def test_fast_path_is_taken_and_is_a_dataclass() -> None:
    assert "__repr__" in OURS.__dict__ and dataclasses.is_dataclass(OURS)
    assert OURS.__dataclass_params__.frozen and OURS.__dataclass_params__.eq
    assert [f.name for f in dataclasses.fields(OURS)] == [f.name for f in dataclasses.fields(STD)]
    assert OURS.__match_args__ == STD.__match_args__ == ("a", "b", "c", "d", "e")
    assert str(inspect.signature(OURS)) == str(inspect.signature(STD))
    assert OURS.__init__.__annotations__ == STD.__init__.__annotations__
    assert OURS.__repr__.__qualname__ == "Ours.__repr__"
    assert OURS.kind == "row" and OURS(1).hello() == "hi"


def test_init_defaults_and_factories() -> None:
    for cls in (STD, OURS):
        r = cls(1)
        assert (r.a, r.b, r.c, r.d, r.e, r.f, r.g) == (1, None, (), 1.5, [], 7, ("x",))
        assert cls(1).e is not cls(1).e  # a factory per call
        assert cls(1, "b", ("x",), 2.0, [3]).e == [3]
        with pytest.raises(TypeError):
            cls()
        with pytest.raises(TypeError):
            cls(1, f=3)  # init=False


def test_repr_eq_hash_as_the_standard() -> None:
    for args in [(1,), (1, "x", ("a", "b"), 2.5, [1, 2])]:
        s, o = STD(*args), OURS(*args)
        assert repr(o) == repr(s).replace("Std(", "Ours(")
        assert hash(o) == hash(s)  # the same tuple hashed
        assert o == OURS(*args) and (o != OURS(*args)) is False
    assert OURS(1, d=1.0) == OURS(1, d=9.0)  # compare=False
    assert OURS(1) != OURS(2) and OURS(1) != STD(1)
    assert OURS(1).__eq__(STD(1)) is NotImplemented
    assert len({OURS(1), OURS(1), OURS(2)}) == 2


def test_frozen_errors() -> None:
    o = OURS(1)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'a'"):
        o.a = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'b'"):
        del o.b
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.other = 1


def test_replace_asdict_pickle_copy_match() -> None:
    o = OURS(1, "x", ("a",))
    r = dataclasses.replace(o, a=2)
    assert (r.a, r.b, r.c) == (2, "x", ("a",)) and o.a == 1
    assert dataclasses.asdict(o) == dataclasses.asdict(STD(1, "x", ("a",)))
    assert pickle.loads(pickle.dumps(o)) == o
    assert copy.deepcopy(o) == o and copy.copy(o) == o
    match o:
        case OURS(a, b):
            assert (a, b) == (1, "x")
        case _:
            pytest.fail("no match")


def test_post_init_runs() -> None:
    @frozen
    class P:
        a: int
        twice: int = field(default=0, init=False)

        def __post_init__(self) -> None:
            object.__setattr__(self, "twice", self.a * 2)

    assert "__repr__" in P.__dict__ and P(3).twice == 6


def test_recursive_repr() -> None:
    @frozen
    class Box:
        items: list[object]

    b = Box([])
    b.items.append(b)
    assert repr(b) == "test_recursive_repr.<locals>.Box(items=[...])"


def test_no_docstring_gets_the_standard_one() -> None:
    @frozen
    class N:
        a: int
        b: str = "x"
        c: tuple[int, ...] = field(default_factory=tuple)
        d: int = field(default=0, init=False)
        e: list[str] = field(default_factory=list, init=False)

    @dataclasses.dataclass(frozen=True)
    class M:
        a: int
        b: str = "x"
        c: tuple[int, ...] = field(default_factory=tuple)
        d: int = field(default=0, init=False)
        e: list[str] = field(default_factory=list, init=False)

    assert N.__doc__ == M.__doc__.replace("M(", "N(")  # type: ignore[union-attr]
    assert N.__doc__ == "N(a: 'int', b: 'str' = 'x', c: 'tuple[int, ...]' = <factory>)"
    assert Std.__doc__ == "A row." and Ours.__doc__ == "A row."


def test_what_it_does_not_cover_gets_the_standard_decorator() -> None:
    @frozen
    class Parent:
        a: int

    @frozen
    class Child(Parent):
        b: int = 0

    @frozen
    class G(Generic[T]):
        v: T

    @frozen
    class Own:
        a: int

        def __repr__(self) -> str:
            return "own"

    assert Child(1, 2) == Child(1, 2) and repr(Child(1)) == (
        "test_what_it_does_not_cover_gets_the_standard_decorator.<locals>.Child(a=1, b=0)"
    )
    assert "__repr__" in Parent.__dict__ and G(1) == G(1)
    assert repr(Own(1)) == "own" and Own(1) == Own(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Child(1).a = 3  # type: ignore[misc]


def test_non_default_after_default_is_an_error() -> None:
    with pytest.raises(TypeError, match="non-default argument"):

        @frozen
        class Bad:
            a: int = 0
            b: int  # type: ignore[misc]


def test_mutable_as_the_standard_dataclass() -> None:
    assert "__repr__" in MOurs.__dict__ and dataclasses.is_dataclass(MOurs)
    assert not MOurs.__dataclass_params__.frozen and MOurs.__dataclass_params__.eq
    assert str(inspect.signature(MOurs)) == str(inspect.signature(MStd))
    assert MOurs.__match_args__ == MStd.__match_args__
    for args in [(1,), (1, "x", ("a", "b"), 2.5, [1, 2])]:
        s, o = MStd(*args), MOurs(*args)
        assert repr(o) == repr(s).replace("MStd(", "MOurs(")
        assert o == MOurs(*args) and o != s
        assert dataclasses.asdict(o) == dataclasses.asdict(s)
    assert MOurs.__hash__ is None and MStd.__hash__ is None
    with pytest.raises(TypeError, match="unhashable"):
        hash(MOurs(1))
    o = MOurs(1)
    o.a = 5
    o.extra = 1
    assert o.a == 5 and o == MOurs(5) and dataclasses.replace(o, b="y").b == "y"
    assert pickle.loads(pickle.dumps(o)) == o
    assert MOurs(1).e is not MOurs(1).e and MOurs(1).g == ("x",)


def test_init_is_compiled_on_first_use_with_its_signature_before() -> None:
    @frozen
    class Lazy:
        """Documented: nothing reads the signature at creation."""

        a: int
        b: str = "x"

    assert type(Lazy.__dict__["__init__"]).__name__ == "_Lazy"
    assert type(Lazy.__dict__["__eq__"]).__name__ == "_Lazy"
    assert str(inspect.signature(Lazy)) == "(a: 'int', b: 'str' = 'x') -> None"
    assert callable(Lazy.__dict__["__init__"])  # the signature compiled it

    @frozen
    class Lazier:
        """Documented."""

        a: int

    class Sub(Lazier):
        pass

    assert repr(Sub(1)).endswith(".Sub(a=1)") and Sub(1) == Sub(1)  # the base's, via a subclass
    assert Lazier.__init__.__qualname__.endswith("Lazier.__init__")
    assert Lazier(2).a == 2
    with pytest.raises(TypeError):
        Lazier(1, 2)


# Class bodies whose fields the shortcut makes without dataclasses' class processing (or hands
# to the standard decorator): each is made in a module of its own, with and without
# `from __future__ import annotations`, once by each decorator, and compared field by field.
BODIES = {
    "plain": "a: int\n    b: str = 'x'\n    c: tuple[int, ...] = field(default_factory=tuple)",
    "field_opts": (
        "a: int = field(default=1, repr=False, compare=False)\n"
        "    b: list[int] = field(default_factory=list, init=False, hash=True)\n"
        "    c: str = field(default='z', metadata={'k': 1})"
    ),
    "classvar": "k: ClassVar[int] = 3\n    a: int = 0",
    "typing_classvar": "k: typing.ClassVar[int] = 3\n    a: int = 0",
    "aliased_classvar": "k: CV[int] = 3\n    a: int = 0",
    "classvar_word_not_typing": "a: NotClassVar = 1",
    "initvar": (
        "a: int\n    b: InitVar[int] = 0\n    c: str = 'x'\n"
        "    def __post_init__(self, b): object.__setattr__(self, 'seen', b)"
    ),
    "typing_initvar": "a: int\n    b: dataclasses.InitVar[int] = 0",
    "kw_only_marker": "a: int\n    _: KW_ONLY\n    b: int = 0",
    "kw_only_field": "a: int = field(default=0, kw_only=True)",
    "no_fields": "pass",
    "inherited_default": "inherited: int",
}
PRELUDE = """
import dataclasses, typing
from dataclasses import InitVar, KW_ONLY, field
from typing import ClassVar
from typing import ClassVar as CV
NotClassVar = int


class Base:
    inherited = 5


@DECO
class C(Base):
    BODY
"""


def _made(body: str, deco: Any, future: bool) -> Any:
    import sys
    import types

    name = f"frozen_case_{len(sys.modules)}"
    mod = types.ModuleType(name)
    sys.modules[name] = mod  # dataclasses finds ClassVar/InitVar through the class's module
    src = PRELUDE.replace("BODY", body).replace("@DECO", "@deco")
    if future:
        src = "from __future__ import annotations\n" + src
    mod.__dict__["deco"] = deco
    exec(compile(src, name, "exec", dont_inherit=True), mod.__dict__)  # noqa: S102 - test bodies
    return mod.C


def _shape(cls: Any) -> dict[str, Any]:
    every = cls.__dict__["__dataclass_fields__"]
    return {
        "all": {
            n: (
                f.name, repr(f.type), f.default, f.default_factory, f.init, f.repr, f.hash,
                f.compare, dict(f.metadata), f.kw_only, f._field_type,
            )
            for n, f in every.items()
        },
        "fields": [f.name for f in dataclasses.fields(cls)],
        "attrs": {n: cls.__dict__.get(n, "-") for n in every},
        "match": cls.__dict__.get("__match_args__"),
        "doc": cls.__doc__,
        "sig": str(inspect.signature(cls)),
        "params": repr(cls.__dataclass_params__),
    }


@pytest.mark.parametrize("future", [True, False])
@pytest.mark.parametrize("case", sorted(BODIES))
@pytest.mark.parametrize("frozen_", [True, False])
def test_fields_as_the_standard_decorator_makes_them(case: str, future: bool, frozen_: bool) -> None:
    std = dataclasses.dataclass(frozen=frozen_)
    ours = frozen if frozen_ else mutable
    a, b = _made(BODIES[case], std, future), _made(BODIES[case], ours, future)
    standard = case in ("kw_only_marker", "kw_only_field")
    assert (type(b.__dict__["__init__"]).__name__ == "_Lazy") is not standard  # the shortcut
    assert _shape(a) == _shape(b)
    if case == "initvar":  # passed to __post_init__, not a field
        for cls in (a, b):
            assert cls(1, 5, "y").seen == 5 and cls(1).seen == 0
            assert repr(cls(1, 5)).endswith("C(a=1, c='x')") and cls(1, 5) == cls(1, 6)


@pytest.mark.parametrize(
    "body, error",
    [
        ("a: list[int] = []", ValueError),  # a mutable default
        ("a: int = 0\n    b = field(default=1)", TypeError),  # a Field without annotation
        ("k: ClassVar[list[int]] = field(default_factory=list)", TypeError),
    ],
)
def test_errors_as_the_standard_decorator_raises_them(body: str, error: type) -> None:
    for deco in (dataclasses.dataclass(frozen=True), frozen, mutable):
        with pytest.raises(error) as got:
            _made(body, deco, True)
        with pytest.raises(error) as want:
            _made(body, dataclasses.dataclass, True)
        assert str(got.value) == str(want.value)


def test_the_methods_compiled_ahead_are_current() -> None:
    """dbwatch/frozen_code.py holds the method sources of every class of dbwatch's modules,
    as dbwatch.frozen makes them now (regenerate: python contrib/frozen_code.py); a class of
    dbwatch's takes its methods from there, not the compiler."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "contrib/frozen_code.py", "--check"],
        capture_output=True, text=True, cwd=root, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    from dbwatch.snapshot import CoverageGap

    gap = CoverageGap("probe", "x", "why")
    assert gap == CoverageGap("probe", "x", "why") and hash(gap) == hash(("probe", "x", "why"))
    for name in ("__init__", "__eq__", "__hash__"):
        fn = CoverageGap.__dict__[name]
        assert fn.__code__.co_filename.endswith("frozen_code.py"), name
        assert fn.__qualname__ == f"CoverageGap.{name}"
