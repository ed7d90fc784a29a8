"""The service processes' garbage-collector tuning (boulevard.platform.gctune, issue 28):
what is alive at start is frozen out of the collector's walks, young collections run
less often, and cycles made afterwards are still collected."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from boulevard.platform.gctune import GC_YOUNG_THRESHOLD, tune_gc


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.mark.usefixtures("restored_gc")
def test_tune_gc_freezes_the_start_and_keeps_collecting_cycles() -> None:
    _young, middle, old = gc.get_threshold()
    tune_gc()
    assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, middle, old)
    assert gc.get_freeze_count() > 0  # the objects alive at start are out of its walks
    a, b = Node(), Node()
    a.other, b.other = b, a  # a cycle made after the freeze
    gone = weakref.ref(a)
    del a, b
    gc.collect()
    assert gone() is None  # still collected
