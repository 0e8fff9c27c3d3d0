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
