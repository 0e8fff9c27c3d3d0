"""HeapFreeze: gc.freeze() once every target ran a cycle (issue 28, the steady cycle's GC)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from dbwatch.daemon.memory import HeapFreeze


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the rest of the suite runs with a normal collector


def test_freezes_once_every_target_ended_a_cycle() -> None:
    heap = HeapFreeze()
    heap.expect(3)
    heap.ended("a")
    heap.ended("a")  # the same target again does not count twice
    heap.ended("b")
    assert heap.frozen == 0
    assert gc.get_freeze_count() == 0
    heap.ended("c")
    assert heap.frozen == 1
    assert gc.get_freeze_count() > 0
    for name in "abc":
        heap.ended(name)
    assert heap.frozen == 1  # once, not per cycle


def test_a_target_that_never_ends_a_cycle_does_not_hold_it_off() -> None:
    heap = HeapFreeze()
    heap.expect(2)
    for _ in range(5):
        heap.ended("a")
    assert heap.frozen == 0
    heap.ended("a")  # 3 x targets cycles ended
    assert heap.frozen == 1


class _Node:
    ref: object = None


def test_a_reload_freezes_again_after_collecting_the_old_setup() -> None:
    heap = HeapFreeze()
    heap.expect(1)
    old = _Node()
    old.ref = old  # a reference cycle, alive at the first freeze
    gone = weakref.ref(old)
    heap.ended("a")
    assert heap.frozen == 1
    del old  # the reload drops the old setup: cyclic garbage, but frozen
    gc.collect()
    assert gone() is not None  # a collection does not look at frozen objects
    heap.expect(2)
    heap.ended("b")
    heap.ended("c")
    assert heap.frozen == 2
    assert gone() is None  # unfrozen and collected before the second freeze


def test_no_targets_no_freeze() -> None:
    heap = HeapFreeze()
    heap.expect(0)
    heap.ended("a")
    assert heap.frozen == 0
