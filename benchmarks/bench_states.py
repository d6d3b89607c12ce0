"""The detector's added cost per handover, load and teardown check, relative to ``copy.deepcopy``.

    python benchmarks/bench_states.py [--rounds N] [--quick]

Drives the real detector on large states: an owner whose ``state_dict()`` returns its
live state (the buggy pattern; for the model, the real ``nn.Module``) is instrumented
(``aliascheck.instrument.instrument``, or the torch adapter for the module) inside a
``Session(Options(enabled=True, steps=0))``. Each measured call runs in a fresh test:

- handover: one ``kept = owner.state_dict()`` (the result kept, so it stays a record);
- load: one ``owner.load_state_dict(kept)`` (``/ckpt`` rows: of a deep copy of it, a checkpoint whose
  tensors the load only reads, so their first read is reused after it). Its added cost is the time spent in the
  ledger's two load hooks (``Ledger.loaded`` as the load begins, ``Ledger.after_load`` as
  it returns), timed inside the call: for the model, torch's own ``load_state_dict`` takes
  ~120 ms against ~5 ms added, and the difference of two such medians moved between -0.1
  and 1.6x deepcopy from run to run. The total is still shown;
- teardown: ``session.ledger.verify_all("teardown")`` with the handover's record present
  (nothing changed, so it only re-fingerprints).

The same ``state_dict()`` call is timed with no session (plain). The detector's added
cost (for the handover instrumented - plain, for the load its hooks' time, all of it for
teardown) is divided by ``copy.deepcopy`` of the same state, timed in the same interleaved rounds (<1 is cheaper).
Goal: at most 0.3x for every shape; a ratio above it is marked MISSED. Medians of
interleaved rounds; absolute times drift 20% between runs, compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from aliascheck.plugins.torch import aliascheck_install

from aliascheck.config import Options
from aliascheck.instrument import instrument
from aliascheck.session import Session

GOAL = 0.3


class Holder:
    """A stateful object that hands out its live state, as the buggy samplers do."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state

    def state_dict(self) -> dict[str, Any]:
        return self.state  # live: no copy

    def load_state_dict(self, sd: dict[str, Any]) -> None:
        # What a normal load does: lists copied one level down, tensors copied into the
        # kept buffers (as torch's default load_state_dict), atoms assigned.
        new = {}
        for key, value in sd.items():
            if isinstance(value, torch.Tensor):
                new[key] = self.state[key].copy_(value)
            else:
                new[key] = list(value) if isinstance(value, list) else value
        self.state = new


@dataclass
class Case:
    owner: Any
    install: Callable[[], Callable[[], None]]  # instruments the owner's class; returns the undo
    # The load takes a checkpoint (a deep copy of the handed-over state, as a saved and reloaded one
    # would be) instead of the live state itself: the common load, whose tensors it only reads.
    checkpoint: bool = False

    def state(self) -> Any:
        return self.owner.state_dict()


def holder(state: dict[str, Any], checkpoint: bool = False) -> Case:
    return Case(Holder(state), lambda: instrument(Holder), checkpoint)


def model_case(checkpoint: bool = False) -> Case:
    model = torch.nn.Sequential(*[torch.nn.Linear(16, 16) for _ in range(500)])  # 1000 tensors
    return Case(model, lambda: aliascheck_install(Options(enabled=True, steps=0)), checkpoint)


def tensor_state() -> dict[str, Any]:
    w = torch.empty(16 * 2**20)  # 64 MiB float32
    w.uniform_(generator=torch.Generator().manual_seed(0))  # touch every page
    return {"w": w}


CASES: dict[str, Callable[[], Case]] = {
    "list1m": lambda: holder({"perm": list(range(1_000_000)), "i": 0}),
    "dict300k": lambda: holder({f"k{i}": [i, i + 1] for i in range(300_000)}),
    "model1000": model_case,
    "tensor64m": lambda: holder(tensor_state()),
    "model1000/ckpt": lambda: model_case(checkpoint=True),
    "tensor64m/ckpt": lambda: holder(tensor_state(), checkpoint=True),
}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds for one call of *fn* (after a collection, so no earlier garbage is paid for), and its result."""
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def plain(case: Case) -> dict[str, float]:
    """The same call with no session: what the owner's ``state_dict()`` costs by itself."""
    return {"plain handover": timed(case.owner.state_dict)[0]}


def deepcopy(case: Case) -> dict[str, float]:
    state = case.state()
    return {"deepcopy": timed(lambda: copy.deepcopy(state))[0]}


def detector(case: Case) -> dict[str, float]:
    """Handover, teardown and load under a fresh session, each call in a test of its own."""
    session = Session(Options(enabled=True, steps=0))
    session.start()
    undo = case.install()
    led = session.ledger
    try:
        session.begin_test("bench")
        t_handover, kept = timed(case.owner.state_dict)
        assert led.stats.handovers == 1, "the handover was not recorded"
        session.end_test(0)

        session.begin_test("bench")
        held = case.owner.state_dict()  # the record teardown re-verifies
        t_teardown, _ = timed(lambda: led.verify_all("teardown"))
        assert led.stats.checked == 1, "teardown did not re-fingerprint the kept snapshot"
        session.end_test(0)
        del held

        source = copy.deepcopy(kept) if case.checkpoint else kept
        session.begin_test("bench")
        hooks = _timing_load_hooks(led)
        t_load, _ = timed(lambda: case.owner.load_state_dict(source))
        assert hooks["calls"] == 2, f"the load did not go through the ledger: {hooks}"
        session.end_test(0)
        del led.loaded, led.after_load
        assert not [f for f in session.findings if f.kind == "mutation"], session.findings
    finally:
        session.stop()
        undo()
    return {"handover": t_handover, "teardown": t_teardown, "load": t_load, "load hooks": hooks["seconds"]}


def _timing_load_hooks(led: Any) -> dict[str, float]:
    """Time *led*'s load hooks from now on (instance attributes over its methods; deleted after)."""
    spent = {"seconds": 0.0, "calls": 0}

    def timing(method: Callable[..., Any]) -> Callable[..., Any]:
        def timed_hook(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                spent["seconds"] += time.perf_counter() - start
                spent["calls"] += 1
        return timed_hook

    led.loaded, led.after_load = timing(led.loaded), timing(led.after_load)
    return spent


def measure(rounds: int) -> dict[str, dict[str, float]]:
    cases = {name: make() for name, make in CASES.items()}
    gc.collect()
    gc.freeze()  # the states are long-lived: keep them out of every later collection
    runs = [plain, deepcopy, detector]
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in cases}
    for r in range(rounds):
        for name, case in cases.items():
            for run in runs[r % len(runs):] + runs[: r % len(runs)]:  # interleaved, rotated
                for key, t in run(case).items():
                    samples[name].setdefault(key, []).append(t)
    return {name: {k: statistics.median(v) for k, v in by.items()} for name, by in samples.items()}


def cell(added: float, base: float) -> str:
    ratio = added / base
    return f"{added * 1e3:10.2f}{ratio:8.3f}{' MISSED' if ratio > GOAL else '':7}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 rounds")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # OpenMP stalls make tensor copies erratic otherwise (PERF-NOTES)
    medians = measure(3 if args.quick else args.rounds)
    print(f"{'':15}{'':12}{'handover':^37}{'load':^37}{'teardown':^18}")
    print(f"{'state':15}{'deepcopy ms':>12}" + f"{'total ms':>12}{'added ms':>10}{'ratio':>8}{'':7}" * 2
          + f"{'ms':>10}{'ratio':>8}")
    for name, m in medians.items():
        base = m["deepcopy"]
        row = (f"{name:15}{base * 1e3:12.1f}"
               f"{m['handover'] * 1e3:12.2f}{cell(m['handover'] - m['plain handover'], base)}"
               f"{m['load'] * 1e3:12.2f}{cell(m['load hooks'], base)}"
               f"{cell(m['teardown'], base)}")
        print(row.rstrip())
    print(f"(added: handover = instrumented - plain, load = time in the ledger's load hooks; ratio = added /"
          f" deepcopy of the same state, goal <= {GOAL})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
