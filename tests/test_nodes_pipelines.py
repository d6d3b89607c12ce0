"""Random pipelines over the fixed nodes: a restored run continues exactly where its state was taken."""

from __future__ import annotations

import functools
import threading
import zlib
from unittest import mock

import pytest
import torch
import torchdata.nodes as tn
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aliascheck.nodes import Mapper, ParallelMapper, PinMemory, Prefetcher, shutdown

# Half the sources alias on purpose: under --aliascheck, expect its warnings about them and keep
# checking everything else. (Their paths too: a Batcher or Filter above one hands it over.)
pytestmark = [
    pytest.mark.aliascheck(ignore=["*.Source:*", "*'index']", "*'t']"]),
    pytest.mark.filterwarnings("ignore::aliascheck.errors.AliascheckWarning"),
]


class Source(tn.BaseNode):
    """Yields 0..n-1. ``aliased``: ``get_state()`` returns the live dict (holding a tensor that
    ``next()`` bumps in place) and ``reset()`` adopts the dict it is given; else fresh dicts."""

    def __init__(self, n: int, aliased: bool) -> None:
        super().__init__()
        self.n, self.aliased = n, aliased

    def reset(self, initial_state=None):
        super().reset(initial_state)
        if initial_state is None:
            initial_state = {"index": 0, "t": torch.zeros(1)}
        self.state = initial_state if self.aliased else self.copy(initial_state)

    def next(self):
        index = self.state["index"]
        if index >= self.n:
            raise StopIteration
        self.state["index"] = index + 1
        self.state["t"].add_(1)
        return index

    def get_state(self):
        return self.state if self.aliased else self.copy(self.state)

    @staticmethod
    def copy(state):
        return {"index": state["index"], "t": state["t"].clone()}


class Filter(tn.BaseNode):
    """Keeps the items whose repr hashes to a non-multiple of 3 (torchdata 0.11 has no Filter)."""

    def __init__(self, source: tn.BaseNode) -> None:
        super().__init__()
        self.source = source

    def reset(self, initial_state=None):
        super().reset(initial_state)
        self.source.reset(None if initial_state is None else initial_state["source"])

    def next(self):
        while True:
            item = next(self.source)
            if zlib.crc32(repr(item).encode()) % 3:
                return item

    def get_state(self):
        return {"source": self.source.state_dict()}


class Header(tn.BaseNode):
    """The first ``n`` items of its source."""

    def __init__(self, source: tn.BaseNode, n: int) -> None:
        super().__init__()
        self.source, self.n = source, n

    def reset(self, initial_state=None):
        super().reset(initial_state)
        self.yielded = 0 if initial_state is None else initial_state["yielded"]
        self.source.reset(None if initial_state is None else initial_state["source"])

    def next(self):
        if self.yielded >= self.n:
            raise StopIteration
        item = next(self.source)
        self.yielded += 1
        return item

    def get_state(self):
        return {"source": self.source.state_dict(), "yielded": self.yielded}


def tag(layer: int, item):
    return (layer, item)


frequencies = st.integers(0, 9)
layers = st.one_of(
    st.tuples(st.just("batch"), st.integers(1, 3), st.booleans()),
    st.tuples(st.just("map")),
    st.tuples(st.just("pmap"), st.integers(1, 2), frequencies, st.sampled_from([None, 2])),
    st.tuples(st.just("filter")),
    st.tuples(st.just("header"), st.integers(0, 20)),
    st.tuples(st.just("prefetch"), st.integers(1, 8), frequencies),
    st.tuples(st.just("pin"), frequencies),
)
THREADED = {"pmap", "prefetch", "pin"}


@st.composite
def pipelines(draw):
    aliased = draw(st.booleans())
    stack = draw(st.lists(layers, max_size=4))
    if aliased and not any(layer[0] in THREADED for layer in stack):
        # Only a node that keeps snapshots can isolate them: over an aliased source, a pipeline
        # of pass-through nodes hands the user live state, which no node here could fix.
        stack.append(("prefetch", draw(st.integers(1, 8)), draw(frequencies)))
    return draw(st.integers(0, 25)), aliased, stack


def build(spec) -> tn.BaseNode:
    n, aliased, stack = spec
    node: tn.BaseNode = Source(n, aliased)
    for i, (kind, *args) in enumerate(stack):
        if kind == "batch":
            node = tn.Batcher(node, batch_size=args[0], drop_last=args[1])
        elif kind == "map":
            node = Mapper(node, functools.partial(tag, i))
        elif kind == "pmap":
            workers, frequency, prebatch = args
            node = ParallelMapper(
                node, functools.partial(tag, i), num_workers=workers, snapshot_frequency=frequency, prebatch=prebatch
            )
        elif kind == "filter":
            node = Filter(node)
        elif kind == "header":
            node = Header(node, args[0])
        elif kind == "prefetch":
            node = Prefetcher(node, prefetch_factor=args[0], snapshot_frequency=args[1])
        else:
            node = PinMemory(node, snapshot_frequency=args[0])
    return node


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pipelines(), st.data())
def test_a_restored_pipeline_continues_where_its_state_was_taken(spec, data):
    before = set(threading.enumerate())
    # PinMemory asks CUDA for its device in __init__; items here pin trivially, so answer 0.
    with mock.patch.object(torch.cuda, "current_device", lambda: 0):
        made = [build(spec)]
        full = list(made[0])
        k = data.draw(st.integers(0, len(full)), label="items before the state")
        node = build(spec)
        made.append(node)
        head = [next(node) for _ in range(k)]
        state = node.state_dict()
        m = data.draw(st.integers(0, len(full) - k), label="items after it")
        middle = [next(node) for _ in range(m)]  # the workers step the source m more times
        again = build(spec)
        made.append(again)
        again.reset(state)
        rest = list(again)
    for each in made:
        shutdown(each)
    assert head == full[:k] and middle == full[k : k + m]
    assert rest == full[k:], "the restored run lost or repeated items"
    assert set(threading.enumerate()) - before == set()
