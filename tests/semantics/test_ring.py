"""A boltons LRU's linked ring of ``[prev, next, key, value]`` lists: built and dropped, in bounded time."""

from __future__ import annotations

import gc

import probelib as p


def test_ring_of_2000_nodes() -> None:
    assert p.build_ring(2000) == 2000
    gc.collect()
    assert p.build_ring(2000) == 2000


def test_ring_leaves_nothing() -> None:
    p.build_ring(50)
    assert p.objects_after(lambda: p.build_ring(2000)) == 0
