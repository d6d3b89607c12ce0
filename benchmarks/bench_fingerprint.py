"""fingerprint() against copy.deepcopy and raw xxh3, side by side in one process.

    python benchmarks/bench_fingerprint.py [--rounds N] [--quick]

Every figure is a median over interleaved rounds; ratios are what to compare
(absolute times drift 20% between runs on a shared machine).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import xxhash  # noqa: E402
from states import STATES  # noqa: E402

from aliascheck.diff import diff  # noqa: E402
from aliascheck.fingerprint import fingerprint  # noqa: E402

GOALS = {"chain": 0.2, "weighted": 0.2, "10k list": 0.08}


def per_call(fn: Callable[[], Any], budget: float = 0.02) -> float:
    """Seconds per call of *fn*, from a loop that runs about *budget* seconds."""
    n, start = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= budget:
            return elapsed / n


def interleaved(candidates: dict[str, Callable[[], Any]], rounds: int, budget: float) -> dict[str, float]:
    samples: dict[str, list[float]] = {k: [] for k in candidates}
    for _ in range(rounds):
        for name, fn in candidates.items():
            samples[name].append(per_call(fn, budget))
    return {k: statistics.median(v) for k, v in samples.items()}


def deep_size(obj: Any, seen: set[int] | None = None) -> int:
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):
        return obj.element_size() * obj.nelement()
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        size += sum(deep_size(x, seen) for x in obj)
    return size


def one_leaf_changed(state: Any) -> Any:
    changed = copy.deepcopy(state)
    node = changed
    while isinstance(node, dict):
        key = next(reversed(node))
        if not isinstance(node[key], (dict, list)):
            node[key] = "changed"
            return changed
        node = node[key]
    node[-1] = -1
    return changed


def states_table(rounds: int, budget: float) -> None:
    print(f"{'state':10} {'deepcopy us':>12} {'fingerprint us':>15} {'ratio':>7} {'goal':>6} "
          f"{'diff us':>9} {'kept/state':>11}")
    for name, make in STATES.items():
        state = make()
        times = interleaved(
            {"deepcopy": lambda s=state: copy.deepcopy(s), "fp": lambda s=state: fingerprint(s)}, rounds, budget
        )
        before, after = fingerprint(state), fingerprint(one_leaf_changed(state))
        changes = diff(before, after)
        assert len(changes) == 1, changes
        diff_time = interleaved({"diff": lambda b=before, a=after: diff(b, a)}, max(3, rounds // 2), budget)["diff"]
        kept = len(before.detail or b"") / deep_size(state)
        goal = GOALS.get(name)
        ratio = times["fp"] / times["deepcopy"]
        print(f"{name:10} {times['deepcopy'] * 1e6:12.2f} {times['fp'] * 1e6:15.2f} {ratio:7.3f} "
              f"{'' if goal is None else goal:>6} {diff_time * 1e6:9.1f} {kept:11.3f}")
        if name == "tiny":
            print(f"{'':10} tiny state: {times['fp'] * 1e6:.2f} us per fingerprint (goal <= 3 us)")


def buffers_table(rounds: int, mib: int) -> None:
    n = mib * 1024 * 1024
    arr = np.random.default_rng(0).integers(0, 255, n, dtype=np.uint8)
    ten = torch.from_numpy(arr.copy()).view(torch.float32)
    candidates = {
        "raw xxh3 (numpy bytes)": lambda: xxhash.xxh3_128_digest(arr),
        "fingerprint(ndarray)": lambda: fingerprint({"buf": arr}),
        "raw xxh3 (tensor bytes)": lambda: xxhash.xxh3_128_digest(ten.numpy()),
        "fingerprint(tensor)": lambda: fingerprint({"buf": ten}),
    }
    times = interleaved(candidates, rounds, 0.0)
    print(f"\n{mib} MiB buffers (GiB/s; goal: fingerprint / raw >= 0.85)")
    for name, t in times.items():
        print(f"  {name:26} {mib / 1024 / t:6.2f} GiB/s")
    print(f"  ndarray ratio {times['raw xxh3 (numpy bytes)'] / times['fingerprint(ndarray)']:.3f}, "
          f"tensor ratio {times['raw xxh3 (tensor bytes)'] / times['fingerprint(tensor)']:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 rounds, 8 MiB buffers")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rounds = 3 if args.quick else args.rounds
    states_table(rounds, 0.01 if args.quick else 0.05)
    buffers_table(rounds, 8 if args.quick else 64)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
