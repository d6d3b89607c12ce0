"""`pytest --aliascheck` against plain `pytest` on a realistic torchdata test module.

    python benchmarks/bench_plugin_overhead.py [--rounds N] [--quick]

The module has several tests that iterate Loader(Prefetcher(Batcher(Mapper(...))))
pipelines, take state mid-epoch, restore a fresh loader from it and compare the
continuation. Both runs are subprocesses, interleaved, medians of N rounds.
Reported: the whole-run wall-time ratio (goal <= 1.15) and the ratio of the time
spent in the tests themselves (from the JUnit XML), which excludes interpreter
start and imports.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from bytecode import compile_aliascheck

MODULE = '''
import pytest
import torch
from torchdata.nodes import Batcher, IterableWrapper, Loader, Mapper, Prefetcher, SamplerWrapper

torch.set_num_threads(1)


def pipeline(n, batch, prefetch):
    node = SamplerWrapper(range(n))
    node = Mapper(node, lambda x: {"x": x, "sq": x * x})
    node = Batcher(node, batch_size=batch)
    return Loader(Prefetcher(node, prefetch_factor=prefetch))


@pytest.mark.parametrize("prefetch", [1, 2, 4])
@pytest.mark.parametrize("cut", [3, 17, 40])
def test_resume_matches_continuation(prefetch, cut):
    loader = pipeline(400, 4, prefetch)
    it = iter(loader)
    for _ in range(cut):
        next(it)
    state = loader.state_dict()
    rest = [b[0]["x"] for b in it]
    again = pipeline(400, 4, prefetch)
    again.load_state_dict(state)
    assert [b[0]["x"] for b in again] == rest


@pytest.mark.parametrize("epochs", [1, 2])
def test_epochs(epochs):
    loader = pipeline(200, 8, 2)
    for _ in range(epochs):
        assert sum(len(b) for b in loader) == 200
        loader.state_dict()


def test_iterable_wrapper_state_each_step():
    loader = Loader(Prefetcher(Batcher(IterableWrapper(range(300)), batch_size=2), prefetch_factor=2))
    states = []
    for i, _ in enumerate(loader):
        if i % 10 == 0:
            states.append(loader.state_dict())
    assert len(states) == 15
'''


def run(directory: Path, flag: list[str], tag: str) -> tuple[float, float]:
    xml = directory / f"junit-{tag}.xml"
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}", *flag, str(directory)],
        capture_output=True, text=True,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark module failed ({tag}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    tests = sum(float(case.get("time", 0)) for case in ET.parse(xml).getroot().iter("testcase"))
    return wall, tests


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="two rounds")
    args = parser.parse_args(argv)
    compile_aliascheck()  # as installed: see bytecode.py
    rounds = 2 if args.quick else args.rounds
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "test_pipelines.py").write_text(MODULE)
        runs: dict[str, list[tuple[float, float]]] = {"plain": [], "aliascheck": []}
        for _ in range(rounds):
            runs["plain"].append(run(directory, [], "plain"))
            runs["aliascheck"].append(run(directory, ["--aliascheck"], "aliascheck"))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(t for _, t in v)) for k, v in runs.items()}
    print(f"{'run':12} {'wall s':>8} {'in tests s':>11}   ({rounds} rounds, medians)")
    for name, (wall, tests) in med.items():
        print(f"{name:12} {wall:8.2f} {tests:11.2f}")
    print(f"ratio wall {med['aliascheck'][0] / med['plain'][0]:.3f} (goal <= 1.15), "
          f"in tests {med['aliascheck'][1] / med['plain'][1]:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
