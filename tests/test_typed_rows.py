"""TypedRow: every row class of the snapshot reads each field by its annotation or its Read."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from dbwatch.snapshot import load_sections
from dbwatch.snapshot.values import Read, TypedRow, _plan


def _subclasses(cls: type[TypedRow]) -> list[type[TypedRow]]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def test_every_row_class_has_a_reading() -> None:
    load_sections()
    classes = [c for c in _subclasses(TypedRow) if c.__module__.startswith("dbwatch.")]
    assert len(classes) >= 25
    for cls in classes:
        assert _plan(cls), cls.__name__


def test_a_field_no_helper_fits_is_an_error_not_a_guess() -> None:
    @dataclass(frozen=True)
    class Odd(TypedRow):
        n: int
        ratio: int | float | None = None

    with pytest.raises(TypeError, match=r"Odd\.ratio: no helper"):
        Odd.from_row({"n": 1})


def test_reads_override_column_convert_and_compute() -> None:
    @dataclass(frozen=True)
    class Row3(
        TypedRow,
        a=Read(column="x"),
        b=Read(convert=lambda v: -1 if v is None else 1),
        c=Read(compute=lambda r: len(r)),
    ):
        a: int = 0
        b: int = 0
        c: int = 0
        d: tuple[int, ...] = ()

    assert Row3.from_row({"x": "7", "d": "{1,2}"}) == Row3(7, -1, 2, (1, 2))


def test_a_read_for_no_field_is_an_error() -> None:
    @dataclass(frozen=True)
    class Typo(TypedRow, nmae=Read(column="name")):
        name: str = ""

    with pytest.raises(TypeError, match="Read for no field"):
        Typo.from_row({})


def test_a_plan_from_annotation_texts_is_the_one_from_the_evaluated_types(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """_plan reads the common annotation texts ("int | None") without evaluating them
    (startup): every row class's plan is the one get_type_hints gives, and a name the class
    or its module binds otherwise is evaluated."""
    import dbwatch.snapshot.values as values

    load_sections()
    classes = [c for c in _subclasses(TypedRow) if c.__module__.startswith("dbwatch.")]
    fast = {c: values._plan(c) for c in classes}
    texts = sum(1 for c in classes for f in c.__annotations__ if values._by_text(c, f))
    assert texts > 50  # the shortcut serves most fields
    monkeypatch.setattr(values, "_by_text", lambda cls, name: None)
    for cls in classes:
        assert values._plan(cls) == fast[cls], cls.__name__

    monkeypatch.undo()

    @dataclass(frozen=True)
    class Shadow(TypedRow):
        int = float  # the class binds a builtin's name: its annotations mean something else
        n: int | None = None

    assert values._by_text(Shadow, "n") is None
    assert values._plan(Shadow)[0][1] is values.opt_float
    assert Shadow.from_row({"n": "2.5"}).n == 2.5
