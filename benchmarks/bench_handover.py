"""What one ``state_dict()`` handover costs under the detector, per call, beside the plain call.

    python benchmarks/bench_handover.py [--rounds N] [--calls N]

Three states, each returned fresh by ``state_dict()`` (correct code: the common case a
suite pays for at every item): a tiny one (``{"i": n, "exhausted": {"a": False, "b": False}}``,
torchdata's weighted sampler's shape), the same with a ``random.getstate()`` tuple, and a
10k-int list. The owner's class is wrapped as discovery wraps it, inside a
``Session(Options(enabled=True, steps=0))`` test. Reported, in microseconds per call: the
plain call, the detector's added cost (instrumented - plain) and the fingerprint of the
same state alone; and their ratio. Goals: at most 10 us added for the tiny state, at most
1.5x the fingerprint alone for the larger ones. Medians of interleaved rounds.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from aliascheck.config import Options
from aliascheck.discovery import watch
from aliascheck.fingerprint import fingerprint
from aliascheck.session import Session

TINY_GOAL = 10.0
RATIO_GOAL = 1.5


class Tiny:
    def __init__(self) -> None:
        self.i = 0

    def state_dict(self) -> dict[str, Any]:
        self.i += 1
        return {"i": self.i, "exhausted": {"a": False, "b": False}}

    def load_state_dict(self, sd: dict[str, Any]) -> None:
        self.i = sd["i"]


class WithRng(Tiny):
    def __init__(self) -> None:
        super().__init__()
        self.rng = random.Random(0)

    def state_dict(self) -> dict[str, Any]:
        self.i += 1
        return {"i": self.i, "exhausted": {"a": False, "b": False}, "rng": self.rng.getstate()}


class LongList(Tiny):
    def __init__(self) -> None:
        super().__init__()
        self.perm = list(range(10_000))

    def state_dict(self) -> dict[str, Any]:
        self.i += 1
        return {"i": self.i, "perm": list(self.perm)}


CASES: dict[str, type[Tiny]] = {"tiny": Tiny, "rng tuple": WithRng, "10k-int list": LongList}


def per_call(fn: Callable[[], Any], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def one_round(cls: type[Tiny], calls: int) -> tuple[float, float, float]:
    """(plain, instrumented, fingerprint alone) in microseconds per call."""
    node = cls()
    plain = per_call(node.state_dict, calls)
    state = node.state_dict()
    alone = per_call(lambda: fingerprint(state), calls)
    session = Session(Options(enabled=True, steps=0))
    session.start()
    undo = watch(cls)
    try:
        session.begin_test("bench_handover")
        watched = cls()
        instrumented = per_call(watched.state_dict, calls)
        session.end_test(0)
    finally:
        if undo is not None:
            undo()
        session.stop()
    return plain, instrumented, alone


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args()
    rows = []
    for name, cls in CASES.items():
        calls = args.calls if name != "10k-int list" else max(200, args.calls // 50)
        rounds = [one_round(cls, calls) for _ in range(args.rounds)]
        plain, instrumented, alone = (statistics.median(r[i] for r in rounds) for i in range(3))
        added = instrumented - plain
        rows.append((name, plain, added, alone, added / alone if alone else float("nan")))
    print(f"{'state':<14} {'plain us':>9} {'added us':>9} {'fingerprint us':>15} {'added/fp':>9}  goal")
    for name, plain, added, alone, ratio in rows:
        goal = f"<= {TINY_GOAL:g} us added" if name == "tiny" else f"<= {RATIO_GOAL:g}x the fingerprint"
        met = added <= TINY_GOAL if name == "tiny" else ratio <= RATIO_GOAL
        print(f"{name:<14} {plain:9.2f} {added:9.2f} {alone:15.2f} {ratio:9.2f}  {goal}{'' if met else '  MISSED'}")


if __name__ == "__main__":
    main()
