"""A serving process's garbage collection: what is alive between requests is frozen,
what a request left in cycles is collected, and a periodic reset finds cycles that died frozen."""

from __future__ import annotations

import gc
import weakref

from memd.core.heap import Heap


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> tuple[Node, weakref.ref[Node]]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a, weakref.ref(a)


def test_a_settle_collects_the_cycles_a_request_left_and_freezes_what_lives() -> None:
    heap = Heap()
    dead = cycle()[1]  # garbage in a cycle, as a request might leave
    kept = [Node() for _ in range(100)]  # a cache that lives on
    heap.settle()
    assert dead() is None
    assert gc.get_freeze_count() >= len(kept)
    assert not any(gc.is_tracked(node) and node in gc.get_objects(generation=2) for node in kept)


def test_a_cycle_that_dies_frozen_is_collected_at_the_next_reset() -> None:
    heap = Heap(reset_every=3)
    node, ref = cycle()
    heap.settle()  # frozen while alive
    del node
    heap.settle()
    gc.collect()  # a full collection skips what is frozen
    assert ref() is not None
    heap.settle()  # the third: everything is walked once
    assert ref() is None and heap.settled == 3
