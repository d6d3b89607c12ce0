"""Cost of isolating one snapshot, per candidate, relative to ``copy.deepcopy`` (<1 is cheaper).

    python benchmarks/bench_isolate.py [--quick]

Candidates: ``copy.deepcopy`` (the fix proposed in meta-pytorch/data PR #1547),
``aliascheck.isolate`` (type-dispatched copier), and pickle protocol 5: ``dumps`` alone is what
a worker pays when the snapshot is unpickled lazily (only if ``get_state()`` reads it),
``dumps+loads`` what a read snapshot costs; ``freeze`` is what the fixed nodes' worker pays
(pickle with tensors and arrays cloned aside), ``freeze+thaw`` what a read snapshot costs them.
``C limit`` is a C-speed copy (marshal round trip of the Python objects plus tensor clones).
Medians of interleaved rounds; compare the ratios of one run, not absolute times.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import marshal
import pickle
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torchdata.nodes as tn
from torch.utils.data import RandomSampler, SequentialSampler

import aliascheck.nodes
from aliascheck.isolation import isolate
from aliascheck.nodes._snapshot import Freezer, thaw


def _real_state(loader: tn.Loader, items: int = 2) -> dict[str, Any]:
    it = iter(loader)
    for _ in range(items):
        next(it)
    state = copy.deepcopy(loader.state_dict())
    aliascheck.nodes.shutdown(loader)
    return state


def chain_state() -> dict[str, Any]:
    """Loader(Prefetcher(Batcher(ParallelMapper(SamplerWrapper)))): nested small dicts."""
    mapper = tn.ParallelMapper(tn.SamplerWrapper(RandomSampler(range(100))), _identity, num_workers=1)
    return _real_state(tn.Loader(tn.Prefetcher(tn.Batcher(mapper, 4), 2)))


def weighted_state(datasets: int = 6) -> dict[str, Any]:
    """A MultiNodeWeightedSampler chain: nested dicts plus a 5 KB generator-state tensor."""
    sources = {
        f"ds{i}": tn.Batcher(
            tn.ParallelMapper(tn.SamplerWrapper(SequentialSampler(range(100))), _identity, num_workers=1), 2
        )
        for i in range(datasets)
    }
    sampler = tn.MultiNodeWeightedSampler(sources, {k: 1.0 for k in sources}, seed=0)
    return _real_state(tn.Loader(tn.Prefetcher(tn.Batcher(sampler, 4), 2)))


def sampler_of(state: dict[str, Any]) -> dict[str, Any]:
    return state["root"]["snapshot"]["source"]["weighted_sampler_state"]


def rng_state() -> dict[str, Any]:
    """The weighted state with a Python ``random.getstate()`` tuple instead of the tensor."""
    state = weighted_state()
    sampler_of(state)["g_state"] = random.Random(0).getstate()
    return state


def list_state(n: int = 10_000) -> dict[str, Any]:
    """A sampler state holding its permutation: a 10k-int list."""
    perm = list(range(n))
    random.Random(0).shuffle(perm)
    return {"_sampler": {"perm": perm, "offset": 0}, "_num_yielded": 0, "_epoch": 0}


def _identity(x: Any) -> Any:
    return x


STATES: dict[str, Callable[[], Any]] = {
    "tiny": lambda: {"index": 7},
    "chain": chain_state,
    "weighted+tensor": weighted_state,
    "weighted+rng": rng_state,
    "weighted+new rng": rng_state,  # a new RNG tuple at every call: the worst case for freeze
    "10k list": list_state,
    "1 MiB tensor": lambda: {"t": torch.zeros(1 << 18)},
}

def c_speed_copy(state: Any) -> Callable[[], Any]:
    """The physical limit: the C-speed round trip of marshal for the Python objects (it walks
    and rebuilds at C speed, but handles builtins only) plus a clone of each tensor."""
    tensors: list[torch.Tensor] = []

    def strip(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            tensors.append(x)
            return None
        return {k: strip(v) for k, v in x.items()} if isinstance(x, dict) else x

    skeleton = strip(state)
    return lambda: (marshal.loads(marshal.dumps(skeleton)), [t.clone() for t in tensors])


def _fresh_rng(call: Callable[[], Any], state: Any) -> Callable[[], Any]:
    """``call``, on ``state`` with a different RNG tuple each time (97 of them, in turn)."""
    sampler = sampler_of(state)
    g = sampler["g_state"]
    pool = [(g[0], (*g[1][i:], *g[1][:i]), g[2]) for i in range(97)]
    turn = itertools.count()

    def with_new_tuple() -> Any:
        sampler["g_state"] = pool[next(turn) % 97]
        return call()

    return with_new_tuple


def _frozen(state: Any) -> Callable[[], Any]:
    freezer = Freezer()  # one per source, as in a node's worker loop
    return lambda: freezer(state)


def _frozen_read(state: Any) -> Callable[[], Any]:
    freezer = Freezer()
    return lambda: thaw(freezer(state))


def _call(fn: Callable[[Any], Any]) -> Callable[[Any], Callable[[], Any]]:
    return lambda state: lambda: fn(state)


# name -> prepare(state) -> the call to time
CANDIDATES: dict[str, Callable[[Any], Callable[[], Any]]] = {
    "deepcopy": _call(copy.deepcopy),
    "isolate": _call(isolate),
    "pickle dumps": _call(lambda s: pickle.dumps(s, protocol=5)),
    "dumps+loads": _call(lambda s: pickle.loads(pickle.dumps(s, protocol=5))),
    "freeze": _frozen,
    "freeze+thaw": _frozen_read,
    "C limit": c_speed_copy,
}


def seconds_per_call(fn: Callable[[], Any], budget: float) -> float:
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < budget or calls < 3:
        for _ in range(8):
            fn()
        calls += 8
    return elapsed / calls


def measure(rounds: int, budget: float) -> dict[tuple[str, str], float]:
    states = {name: make() for name, make in STATES.items()}
    calls = {(s, c): prepare(states[s]) for s in states for c, prepare in CANDIDATES.items()}
    for c in CANDIDATES:
        calls[("weighted+new rng", c)] = _fresh_rng(calls[("weighted+new rng", c)], states["weighted+new rng"])

    samples: dict[tuple[str, str], list[float]] = {}
    names = list(CANDIDATES)
    for r in range(rounds):
        for state_name in states:
            for cand in names[r % len(names):] + names[: r % len(names)]:  # interleaved, rotated
                t = seconds_per_call(calls[(state_name, cand)], budget)
                samples.setdefault((state_name, cand), []).append(t)
    return {key: statistics.median(v) for key, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one short round (smoke run)")
    args = parser.parse_args()
    torch.set_num_threads(1)  # OpenMP stalls make tensor copies erratic otherwise (PERF-NOTES)
    medians = measure(rounds=1 if args.quick else 5, budget=0.01 if args.quick else 0.05)
    names = list(CANDIDATES)
    print(f"{'state':16}{'deepcopy us':>13}" + "".join(f"{c:>14}" for c in names[1:]))
    for state_name in STATES:
        base = medians[(state_name, "deepcopy")]
        cells = "".join(f"{medians[(state_name, c)] / base:14.3f}" for c in names[1:])
        print(f"{state_name:16}{base * 1e6:13.1f}{cells}")
    print("(columns after the first: time relative to deepcopy of the same state; <1 is cheaper)")


if __name__ == "__main__":
    main()
