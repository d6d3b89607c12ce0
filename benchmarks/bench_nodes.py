"""Prefetcher throughput (items/s) with isolated snapshots, against upstream torchdata 0.11.

    python benchmarks/bench_nodes.py [--quick]

``prefetch_factor=4``, a tight consumer loop, ``torch.set_num_threads(1)``, medians of
interleaved rounds, ``snapshot_frequency`` 1 and 8, over four source states whose ``get_state()``
hands out live state mutated in place by ``next()`` (except the fresh small dict): the nested
state's counters every item and its generator-state tensor every 16 items; the RNG variant gets
a new ``random.getstate()`` tuple every 1000 items (``_WeightedSampler`` redraws per 1000).  Variants,
all the same worker loop except upstream's own node:

* ``upstream``: ``torchdata.nodes.Prefetcher`` as shipped (aliased snapshots: the budget);
* ``deepcopy``: upstream patched with ``copy.deepcopy`` (meta-pytorch/data PR #1547);
* ``isolate``: ``aliascheck.isolate`` (type-dispatched copy) in the worker;
* ``pickle``: plain ``pickle.dumps`` in the worker (to be unpickled on read);
* ``ours``: ``aliascheck.nodes.Prefetcher`` (pickle with tensors cloned aside, thawed on read).

Then an isolation check per node and state: a state taken after 16 items must be unchanged after
32 more, and a node restored from it must yield item 16 (the 17th) next.
"""

from __future__ import annotations

import argparse
import copy
import functools
import pickle
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torchdata.nodes as tn
from torchdata.nodes.map import _SingleThreadedMapper

sys.path.insert(0, str(Path(__file__).parent))
from bench_isolate import list_state, rng_state, sampler_of, weighted_state  # noqa: E402

import aliascheck.nodes  # noqa: E402
from aliascheck.isolation import isolate  # noqa: E402
from aliascheck.nodes._feed import feed_queue  # noqa: E402

PREFETCH = 4


class LiveSource(tn.BaseNode):
    """Yields 0, 1, 2, ...; ``get_state()`` returns its live state, which ``next()`` mutates."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        self.template = KINDS[kind][0]()

    def reset(self, initial_state: dict | None = None) -> None:
        super().reset(initial_state)
        self.state = isolate(self.template if initial_state is None else initial_state)
        self.index = KINDS[self.kind][2](self.state)

    def next(self) -> int:
        i = self.index
        self.index += 1
        KINDS[self.kind][1](self.state, self.index)
        return i

    def get_state(self) -> dict:
        return {"index": self.index} if self.kind == "small dict" else self.state


def _step_nested(state: dict, i: int) -> None:
    state["num_yielded"] = i
    source = state["root"]["snapshot"]["source"]
    source["num_yielded"] = i
    source["dataset_node_states"][f"ds{i % 6}"]["source"]["it_state"]["snapshot"]["_num_yielded"] += 1
    sampler = sampler_of(state)
    sampler["offset"] = i
    g = sampler["g_state"]
    if isinstance(g, torch.Tensor):
        if i % 16 == 0:  # in place, often enough to show in the isolation check
            g[i // 16 % g.numel()] += 1
    elif i % 1000 == 0:  # a new RNG state per batch of 1000 draws, as _WeightedSampler refreshes its own
        sampler["g_state"] = (g[0], (*g[1][1:], g[1][0]), g[2])


def _step_list(state: dict, i: int) -> None:
    state["_num_yielded"] = i
    perm = state["_sampler"]["perm"]
    perm[i % len(perm)], perm[(7 * i) % len(perm)] = perm[(7 * i) % len(perm)], perm[i % len(perm)]
    state["_sampler"]["offset"] = i


# kind -> (initial state, step in place, read the index back)
KINDS: dict[str, tuple[Callable[[], dict], Callable[[dict, int], None], Callable[[dict], int]]] = {
    "small dict": (lambda: {"index": 0}, lambda s, i: None, lambda s: s["index"]),
    "nested+tensor": (functools.cache(lambda: _at_zero(weighted_state())), _step_nested, lambda s: s["num_yielded"]),
    "nested+rng": (functools.cache(lambda: _at_zero(rng_state())), _step_nested, lambda s: s["num_yielded"]),
    "10k list": (list_state, _step_list, lambda s: s["_num_yielded"]),
}


def _at_zero(state: dict) -> dict:
    state["num_yielded"] = 0
    return state


def _patched(snapshot: Callable[[Any], Any]) -> Callable[..., tn.Prefetcher]:
    """Upstream's Prefetcher and consumer, with our worker loop storing ``snapshot(state)``."""

    class Patched(tn.Prefetcher):
        def reset(self, initial_state: dict | None = None) -> None:
            tn.BaseNode.reset(self, initial_state)
            if self._it is not None:
                self._it._shutdown()
            worker = functools.partial(feed_queue, snapshot=snapshot)
            self._it = _SingleThreadedMapper(
                self.source, self.prefetch_factor, worker, self.snapshot_frequency, initial_state
            )

    return Patched


VARIANTS: dict[str, Callable[..., tn.BaseNode]] = {
    "upstream": tn.Prefetcher,
    "deepcopy": _patched(copy.deepcopy),
    "isolate": _patched(functools.partial(isolate, on_uncopyable="share")),
    "pickle": _patched(functools.partial(pickle.dumps, protocol=5)),
    "ours": aliascheck.nodes.Prefetcher,
}


def items_per_second(variant: str, kind: str, frequency: int, budget: float) -> float:
    node = VARIANTS[variant](LiveSource(kind), prefetch_factor=PREFETCH, snapshot_frequency=frequency)
    for _ in range(PREFETCH + 1):
        next(node)
    count, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < budget:
        for _ in range(16):
            next(node)
        count += 16
    aliascheck.nodes.shutdown(node)
    return count / elapsed


def isolation_check(variant: str, kind: str) -> tuple[bool, int]:
    """(state unchanged after 32 more items, first item of a node restored from it)."""
    node = VARIANTS[variant](LiveSource(kind), prefetch_factor=PREFETCH, snapshot_frequency=1)
    for _ in range(16):
        next(node)
    state = node.state_dict()
    before = copy.deepcopy(state)
    for _ in range(32):  # the worker must step the source 32 more times: no timing involved
        next(node)
    unchanged = same(state, before)
    restored = VARIANTS[variant](LiveSource(kind), prefetch_factor=PREFETCH, snapshot_frequency=1)
    restored.reset(state)
    first = next(restored)
    aliascheck.nodes.shutdown(node)
    aliascheck.nodes.shutdown(restored)
    return unchanged, first


def same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and a == b


def measure(rounds: int, budget: float) -> dict[tuple[str, int], dict[str, list[float]]]:
    """Per (kind, frequency) cell, all variants in turn, ``rounds`` times (rotating the order):
    background load then hits a cell's variants alike, and ratios are taken within a round."""
    cells: dict[tuple[str, int], dict[str, list[float]]] = {}
    names = list(VARIANTS)
    for kind in KINDS:
        for frequency in (1, 8):
            cell = cells[(kind, frequency)] = {v: [] for v in names}
            for r in range(rounds):
                for variant in names[r % len(names):] + names[: r % len(names)]:
                    cell[variant].append(items_per_second(variant, kind, frequency, budget))
    return cells


def paired(cell: dict[str, list[float]], variant: str, baseline: str) -> float:
    return statistics.median(a / b for a, b in zip(cell[variant], cell[baseline], strict=True))


GOALS = {  # (kind, frequency, baseline): minimum ours/baseline, from the issue
    ("small dict", 1, "upstream"): 0.9,
    ("nested+tensor", 8, "upstream"): 0.75,
    ("nested+rng", 8, "upstream"): 0.75,
    ("nested+tensor", 1, "deepcopy"): 3.0,
    ("nested+rng", 1, "deepcopy"): 5.0,
    ("10k list", 1, "deepcopy"): 10.0,
}


def report(cells: dict[tuple[str, int], dict[str, list[float]]]) -> None:
    names = list(VARIANTS)
    print(f"{'state':14}{'freq':>5}" + "".join(f"{v:>10}" for v in names) + "  ours/up  ours/dc  goals")
    for (kind, frequency), cell in cells.items():
        up, dc = paired(cell, "ours", "upstream"), paired(cell, "ours", "deepcopy")
        goals = [(b, g, up if b == "upstream" else dc) for (k, f, b), g in GOALS.items() if (k, f) == (kind, frequency)]
        marks = " ".join(f"vs {b} >={g:g}: {'ok' if got >= g else 'MISSED'}" for b, g, got in goals)
        rates = "".join(f"{statistics.median(cell[v]):10.0f}" for v in names)
        print(f"{kind:14}{frequency:5d}{rates}{up:9.2f}{dc:9.1f}  {marks}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short round (smoke run)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for kind in KINDS:
        KINDS[kind][0]()  # build the real torchdata states once, outside the timing
    cells = measure(rounds=1 if args.quick else 21, budget=0.02 if args.quick else 0.04)
    print("items/s: medians of interleaved rounds; ratios: medians of per-round ratios (prefetch_factor=4)")
    report(cells)
    print("\nisolation: state taken at item 16, unchanged after 32 more? next item after restore (want 16)")
    for kind in KINDS:
        cells = [f"{v}: {'ok ' if same else 'CHANGED'} {first:3d}" for v in ("upstream", "deepcopy", "ours")
                 for same, first in [isolation_check(v, kind)]]
        print(f"  {kind:14}" + "   ".join(cells))


if __name__ == "__main__":
    main()
