"""The daemon's heap settled after its start-up (dbwatch.daemon.memory): one full collection,
then what is left is frozen out of the collector's generations; cyclic garbage among the
frozen objects waits for the next settle (a reload, or the keeper every REFREEZE_EVERY), and
is collected then. No database: objects in a reference cycle, watched by weak references."""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Iterator

import pytest

from dbwatch.daemon import memory


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> tuple[Node, weakref.ref[Node]]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a, weakref.ref(b)


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()  # the rest of this test process collects as before
    gc.set_threshold(*threshold)


def test_settle_collects_what_is_garbage_and_freezes_what_lives() -> None:
    dead, dead_ref = cycle()
    del dead
    alive, alive_ref = cycle()
    memory.settle()
    assert dead_ref() is None  # garbage before the freeze: collected, not frozen
    assert alive_ref() is not None
    assert gc.get_freeze_count() > 0
    assert not any(o is alive for o in gc.get_objects())  # out of the generations
    assert gc.get_threshold()[0] == max(memory.YOUNG, 700)  # the young generation widened


def test_a_frozen_cycle_dropped_later_is_collected_by_the_next_settle() -> None:
    alive, ref = cycle()
    memory.settle()
    del alive
    gc.collect()  # the collector alone does not see the frozen part
    assert ref() is not None
    memory.settle()  # unfreeze, collect, freeze again
    assert ref() is None


def test_the_keeper_settles_when_asked_and_again_every_refreeze() -> None:
    keeper = memory.MemoryKeeper(every=60.0, refreeze=0.3)
    keeper.start()
    try:
        assert keeper.settles == 0  # nothing frozen before the start-up is done
        keeper.settle_soon()
        end = time.time() + 10
        while keeper.settles < 1 and time.time() < end:
            time.sleep(0.01)
        assert keeper.settles >= 1
        alive, ref = cycle()
        settled = keeper.settles
        while keeper.settles < settled + 2 and time.time() < end:  # a whole settle after it
            time.sleep(0.01)
        del alive
        while ref() is not None and time.time() < end:  # the next re-settle collects it
            time.sleep(0.01)
        assert ref() is None
    finally:
        keeper.stop()
