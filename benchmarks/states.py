"""Real states to measure against: built from real torchdata nodes, not imitations."""

from __future__ import annotations

from typing import Any


def tiny() -> dict[str, Any]:
    return {"index": 7}


def chain() -> dict[str, Any]:
    """A Loader(Prefetcher(Batcher(ParallelMapper(SamplerWrapper)))) state, mid-epoch."""
    import torch.utils.data as tud
    from torchdata.nodes import Batcher, Loader, ParallelMapper, Prefetcher, SamplerWrapper

    node = SamplerWrapper(tud.RandomSampler(range(64), generator=__import__("torch").Generator().manual_seed(0)))
    node = ParallelMapper(node, map_fn=lambda x: x * 2, num_workers=2, method="thread")
    node = Prefetcher(Batcher(node, batch_size=4), prefetch_factor=2)
    loader = Loader(node)
    it = iter(loader)
    for _ in range(3):
        next(it)
    state = loader.state_dict()
    node.reset()  # stop the worker threads; the state stays
    _shutdown(node)
    return state


def weighted() -> dict[str, Any]:
    """A MultiNodeWeightedSampler state: per-source states plus a generator-state tensor."""
    from torchdata.nodes import IterableWrapper, Loader
    from torchdata.nodes.samplers.multi_node_weighted_sampler import MultiNodeWeightedSampler

    sources = {f"ds{i}": IterableWrapper(range(i * 100, i * 100 + 50)) for i in range(4)}
    node = MultiNodeWeightedSampler(sources, {k: 1.0 for k in sources}, seed=0)
    loader = Loader(node)
    it = iter(loader)
    for _ in range(5):
        next(it)
    return loader.state_dict()


def permutation() -> dict[str, Any]:
    """A sampler state holding a 10k-int permutation list."""
    import random

    perm = list(range(10_000))
    random.Random(0).shuffle(perm)
    return {"sampler": {"perm": perm, "offset": 123, "epoch": 2}, "num_yielded": 123}


def _shutdown(node: Any) -> None:
    it = getattr(node, "_it", None)
    if it is not None and hasattr(it, "_shutdown"):
        it._shutdown()


STATES = {"tiny": tiny, "chain": chain, "weighted": weighted, "10k list": permutation}
