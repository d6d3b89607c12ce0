"""How long ``aliascheck check torchdata.nodes`` takes, against the 60 s budget of the CI gate.

    python benchmarks/bench_sweep.py [--rounds N] [--explore N]

Each round runs the console command in a fresh process, as CI does, once in-process
(``--workers 1``) and once with ``--workers 2``, interleaved; the floor is
``python -c "import torchdata.nodes"`` (torch's import: what any check pays first).
Prints medians (seconds) and the ratios: to the floor, and to the 60 s budget.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

BUDGET = 60.0


def aliascheck() -> list[str]:
    script = Path(sys.executable).with_name("aliascheck")
    return [str(script)] if script.exists() else [shutil.which("aliascheck") or "aliascheck"]


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: findings (MultiNodeWeightedSampler.reset), expected
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--explore", type=int, default=0, help="also pass --explore N to each sweep")
    args = parser.parse_args()
    explore = ["--explore", str(args.explore)] if args.explore else []
    runs = {
        "floor: import torchdata.nodes": [sys.executable, "-c", "import torchdata.nodes"],
        "sweep, --workers 1": [*aliascheck(), "check", "torchdata.nodes", *explore, "--workers", "1"],
        "sweep, --workers 2": [*aliascheck(), "check", "torchdata.nodes", *explore, "--workers", "2"],
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, argv in runs.items():
            times[name].append(timed(argv))
    floor = statistics.median(times["floor: import torchdata.nodes"])
    print(f"aliascheck check torchdata.nodes{' ' + ' '.join(explore) if explore else ''}: "
          f"medians of {args.rounds} rounds (seconds)")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:32} {median:7.2f}   x{median / floor:5.1f} floor   "
              f"{median / BUDGET:5.1%} of the {BUDGET:g} s budget")


if __name__ == "__main__":
    main()
