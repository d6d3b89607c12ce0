"""aliascheck.nodes: torchdata's nodes with isolated snapshots, interchangeable with upstream.

No test sleeps to provoke the race: after a state is taken at item i, taking k more items from
the node forces its worker to step the source at least k more times, so an aliased snapshot
has certainly moved by then.
"""

from __future__ import annotations

import functools
import inspect
import pickle
import threading

import pytest
import torch
import torchdata.nodes as tn

from aliascheck.isolation import IsolationWarning
from aliascheck.nodes import Mapper, ParallelMapper, PinMemory, Prefetcher, shutdown
from aliascheck.nodes._feed import pin_memory_loop
from aliascheck.nodes._iters import SingleThreadedMapper

# The sources below alias on purpose (that is what the nodes must cope with): under --aliascheck,
# expect its warnings about them and keep checking everything else.
pytestmark = [
    pytest.mark.aliascheck(ignore=["*.MutableSource:*", "*.TensorSource:*"]),
    pytest.mark.filterwarnings("ignore::aliascheck.errors.AliascheckWarning"),
]


class MutableSource(tn.BaseNode):
    """The seed source: ``get_state()`` returns its own live dict, updated in ``next()``, and
    ``reset()`` adopts the dict it is given."""

    def __init__(self, n: int, extra: dict | None = None) -> None:
        super().__init__()
        self.n, self.extra = n, extra or {}

    def reset(self, initial_state=None):
        super().reset(initial_state)
        self.state = self.load(initial_state)

    def load(self, initial_state):
        return {"index": 0, **self.extra} if initial_state is None else initial_state

    def next(self):
        index = self.state["index"]
        if index >= self.n:
            raise StopIteration
        self.state["index"] = index + 1
        return index

    def get_state(self):
        return self.state


class FreshSource(MutableSource):
    """A well-behaved source, which upstream's nodes handle correctly."""

    def load(self, initial_state):
        return {"index": 0, **self.extra} if initial_state is None else dict(initial_state)

    def get_state(self):
        return dict(self.state)


class Stateless(tn.BaseNode):
    """Yields "x" forever; its state is ``{}``, which upstream never stores."""

    def reset(self, initial_state=None):
        super().reset(initial_state)

    def next(self):
        return "x"

    def get_state(self):
        return {}


@pytest.fixture
def track():
    """Register a node to shut down after the test; then no thread may be left behind."""
    before = set(threading.enumerate())
    made: list = []
    yield lambda node: made.append(node) or node
    for node in made:
        shutdown(node)
    assert [t for t in threading.enumerate() if t not in before] == []


@pytest.fixture
def cpu_pin(monkeypatch):
    """PinMemory's constructor asks CUDA for its device (as upstream's does); on a CPU-only
    machine answer 0, so the node's own code runs: items that pin trivially need no device."""
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)


def take(node, k):
    return [next(node) for _ in range(k)]


def prefetcher(source):
    return Prefetcher(source, prefetch_factor=3, snapshot_frequency=1)


def initial_only(source, run=0):
    return Prefetcher(source, prefetch_factor=3, snapshot_frequency=(0, 7)[run % 2])


def mapper(source):
    return ParallelMapper(source, str, num_workers=2, snapshot_frequency=1)


def pin_loop(source, initial_state=None):
    worker = functools.partial(pin_memory_loop, device_id=0, device=None)
    return SingleThreadedMapper(source, 1, worker, 1, initial_state)


def restored_first(make, k, track):
    node = track(make(MutableSource(10)))
    assert next(node) in (0, "0")
    state = node.state_dict()
    take(node, k)  # the worker steps the source at least k more times
    again = track(make(MutableSource(10)))
    again.reset(state)
    return next(again)


@pytest.mark.parametrize("run", range(100))
def test_prefetcher_restores_the_item_after_the_last_delivered(run, track):
    assert restored_first(prefetcher, 1 + run % 5, track) == 1


@pytest.mark.parametrize("run", range(100))
def test_the_initial_snapshot_is_isolated_too(run, track):
    assert restored_first(functools.partial(initial_only, run=run), 1 + run % 5, track) == 1


@pytest.mark.parametrize("run", range(100))
def test_parallel_mapper_restores_the_item_after_the_last_delivered(run, track):
    assert restored_first(mapper, 1 + run % 5, track) == "1"


@pytest.mark.parametrize("run", range(100))
def test_pin_memory_loop_on_cpu_restores_the_item_after_the_last_delivered(run, track):
    it = track(pin_loop(MutableSource(10)))
    assert next(it) == 0
    state = it.get_state()
    take(it, 1 + run % 5)
    assert next(track(pin_loop(MutableSource(10), state))) == 1


@pytest.mark.no_aliascheck  # shows upstream's aliasing on purpose
@pytest.mark.parametrize(
    "make",
    [
        functools.partial(tn.Prefetcher, prefetch_factor=3),
        functools.partial(tn.ParallelMapper, map_fn=str, num_workers=2),
    ],
)
def test_upstream_restores_too_late_in_the_same_scenario(make, track):
    node = track(make(MutableSource(10), snapshot_frequency=1))
    next(node)
    state = node.state_dict()
    take(node, 3)
    shutdown(node)
    again = track(make(MutableSource(10)))
    again.reset(state)
    assert int(next(again)) >= 4


class Pinnable:
    def __init__(self, value):
        self.value = value

    def pin_memory(self):
        return ("pinned", self.value)


def test_the_pin_loop_pins_each_item(track):
    it = track(pin_loop(Mapper(FreshSource(3), Pinnable)))
    assert list(it) == [("pinned", 0), ("pinned", 1), ("pinned", 2)]


def test_pin_memory_node_on_cpu(cpu_pin, track):
    assert restored_first(lambda s: PinMemory(s, snapshot_frequency=1), 3, track) == 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="pinning a tensor needs CUDA (none on this machine)")
def test_pin_memory_pins_tensors_on_cuda(track):
    node = track(PinMemory(Mapper(FreshSource(3), lambda i: torch.full((2,), i)), "cuda"))
    assert all(t.is_pinned() for t in node)


@pytest.mark.no_aliascheck
@pytest.mark.parametrize("make", [Prefetcher, tn.Prefetcher])
def test_a_falsy_state_is_stored(make, track):
    node = track(make(Stateless(), prefetch_factor=2, snapshot_frequency=1))
    take(node, 5)
    expected = 0 if make is Prefetcher else 5  # upstream's `if snapshot:` drops `{}`
    assert node.state_dict() == {"snapshot": {}, "steps_since_snapshot": expected}


def test_a_falsy_state_is_stored_by_parallel_mapper(track):
    node = track(ParallelMapper(Stateless(), str, num_workers=1))
    take(node, 5)
    assert node.state_dict() == {"it_state": {"snapshot": {}, "steps_since_snapshot": 0}}


@pytest.mark.no_aliascheck  # the test edits a handed-over state on purpose
@pytest.mark.parametrize("make", [initial_only, mapper])
def test_editing_a_returned_state_does_not_reach_the_node(make, track):
    node = track(make(FreshSource(10)))
    next(node)
    first = node.state_dict()
    inner = first["snapshot"] if "snapshot" in first else first["it_state"]["snapshot"]
    inner["index"] = 99
    assert "99" not in repr(node.state_dict())


def test_restoring_leaves_the_callers_checkpoint_alone(track):
    node = track(prefetcher(MutableSource(10)))
    take(node, 2)
    state = node.state_dict()
    kept = pickle.dumps(state)
    again = track(prefetcher(MutableSource(10)))  # its source adopts what reset() passes it
    again.reset(state)
    assert list(again) == list(range(2, 10))
    assert pickle.dumps(state) == kept


def variants():
    return {
        "Prefetcher": (tn.Prefetcher, Prefetcher, {"prefetch_factor": 2, "snapshot_frequency": 2}),
        "ParallelMapper": (tn.ParallelMapper, ParallelMapper, {"map_fn": str, "num_workers": 2}),
        "prebatch": (tn.ParallelMapper, ParallelMapper, {"map_fn": str, "num_workers": 2, "prebatch": 3}),
        "PinMemory": (tn.PinMemory, PinMemory, {"snapshot_frequency": 3}),
    }


@pytest.mark.parametrize("name", list(variants()))
@pytest.mark.parametrize("direction", ["upstream->ours", "ours->upstream"])
def test_state_dicts_restore_across_implementations(name, direction, cpu_pin, track):
    upstream, ours, kwargs = variants()[name]
    save, load = (upstream, ours) if direction == "upstream->ours" else (ours, upstream)
    node = track(tn.Loader(save(FreshSource(12), **kwargs)))
    it = iter(node)
    take(it, 5)
    state = node.state_dict()
    rest = list(it)
    again = track(tn.Loader(load(FreshSource(12), **kwargs)))
    again.load_state_dict(state)
    assert list(again) == rest and len(rest) == 7
    assert "aliascheck" not in str(pickle.dumps(state))  # plain dicts: upstream can read them


def test_the_nodes_take_upstreams_arguments_and_are_upstreams_types():
    for ours, upstream in [(Prefetcher, tn.Prefetcher), (PinMemory, tn.PinMemory), (ParallelMapper, tn.ParallelMapper)]:
        assert inspect.signature(ours).parameters.keys() == inspect.signature(upstream).parameters.keys()
        assert issubclass(ours, upstream)
    assert inspect.signature(Mapper).parameters.keys() == inspect.signature(tn.Mapper).parameters.keys()


def test_mapper_runs_inline_and_passes_its_source_state_through(track):
    node = track(Mapper(FreshSource(4), str))
    assert take(node, 2) == ["0", "1"] and node.state_dict() == {"it_state": {"source": {"index": 2}}}


def test_errors_in_the_source_reach_the_consumer(track):
    class Failing(FreshSource):
        def next(self):
            if self.state["index"] == 2:
                raise ValueError("boom")
            return super().next()

    node = track(Prefetcher(Failing(5), prefetch_factor=2))
    assert take(node, 2) == [0, 1]
    with pytest.raises(ValueError, match="boom"):
        next(node)


def test_a_source_whose_state_cannot_be_copied_still_runs(track):
    node = track(Prefetcher(MutableSource(6, {"lock": threading.Lock()}), prefetch_factor=2))
    with pytest.warns(IsolationWarning, match=r"lock at state(\['snapshot'\])?\['lock'\]"):
        take(node, 2)
        state = node.state_dict()
        again = track(Prefetcher(MutableSource(6), prefetch_factor=2))
        again.reset(state)  # the copy for the source shares the lock too, and says so
        assert list(again) == [2, 3, 4, 5]


def test_a_state_that_cannot_be_pickled_is_copied_instead(track):
    node = track(prefetcher(MutableSource(8, {"fn": lambda x: x, "t": torch.zeros(2)})))
    next(node)
    state = node.state_dict()
    take(node, 4)
    assert state["snapshot"]["index"] == 1 and callable(state["snapshot"]["fn"])
    again = track(prefetcher(MutableSource(8)))
    again.reset(state)
    assert next(again) == 1


def test_a_tensor_in_the_state_is_isolated(track):
    class TensorSource(MutableSource):
        def next(self):
            self.state["t"].add_(1)  # in place, as a generator state would move
            return super().next()

    node = track(prefetcher(TensorSource(10, {"t": torch.zeros(3)})))
    next(node)
    state = node.state_dict()
    take(node, 4)
    assert state["snapshot"]["t"].tolist() == [1.0, 1.0, 1.0]


def test_process_workers_restore_too(track):
    make = functools.partial(
        ParallelMapper, map_fn=str, num_workers=1, method="process", multiprocessing_context="fork"
    )
    node = track(make(FreshSource(6)))
    take(node, 2)
    state = node.state_dict()
    again = track(make(FreshSource(6)))
    again.reset(state)
    assert list(again) == ["2", "3", "4", "5"]


def test_shutdown_stops_every_worker_of_a_pipeline_and_may_repeat(track):
    before = set(threading.enumerate())
    loader = tn.Loader(Prefetcher(tn.Batcher(ParallelMapper(FreshSource(20), str, num_workers=2), 2), 2))
    take(iter(loader), 3)
    assert set(threading.enumerate()) - before
    shutdown(loader)
    shutdown(loader)
    assert set(threading.enumerate()) - before == set()
