"""A session's fixed start-up: an empty test, ``pytest --aliascheck`` against plain ``pytest``.

    python benchmarks/bench_startup.py [--rounds N] [--quick] [--against TREE]

Both sides are whole processes (``python -m pytest -q -p no:cacheprovider`` on a module
holding one empty test), run in turn, medians of N rounds. Reported: wall and CPU
(user + sys) seconds of each, and what ``--aliascheck`` adds (the median of the
per-round differences, and the ratio). Goal: <= 0.1 s added.

``--against TREE`` runs a third side, ``--aliascheck`` with ``PYTHONPATH=TREE`` (another
checkout of aliascheck, e.g. the one before a change), in the same rounds: a before/after
pair measured side by side. The environment is passed on as it is (``PYTHONDONTWRITEBYTECODE``
included, as on this machine and some CI ones).
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compile_aliascheck

EMPTY = "def test_empty():\n    pass\n"


def run(directory: Path, flags: list[str], pythonpath: str | None) -> tuple[float, float]:
    """One pytest process: (wall, user + sys) seconds."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *flags, str(directory)],
                          capture_output=True, text=True, env=env, cwd=directory)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"the empty test failed ({flags}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="five rounds")
    parser.add_argument("--against", metavar="TREE", help="also --aliascheck with PYTHONPATH=TREE")
    args = parser.parse_args(argv)
    compile_aliascheck()  # as installed: see bytecode.py
    sides: dict[str, tuple[list[str], str | None]] = {"plain": ([], None), "aliascheck": (["--aliascheck"], None)}
    if args.against:
        for package in ("aliascheck", "plugins"):
            compileall.compile_dir(os.path.join(args.against, package), quiet=1)
        sides["against"] = (["--aliascheck"], os.path.abspath(args.against))
    rounds = 5 if args.quick else args.rounds
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        (directory / "test_empty.py").write_text(EMPTY)
        for _ in range(rounds + 1):  # the first round warms the caches, not counted
            for name, (flags, pythonpath) in sides.items():
                runs[name].append(run(directory, flags, pythonpath))
    runs = {name: results[1:] for name, results in runs.items()}
    print(f"{'side':12} {'wall s':>8} {'cpu s':>8} {'added wall s':>13} {'added cpu s':>12}   "
          f"({rounds} rounds, medians)")
    for name, results in runs.items():
        wall, cpu = (statistics.median(r[i] for r in results) for i in (0, 1))
        added = [statistics.median(r[i] - p[i] for r, p in zip(results, runs["plain"], strict=True)) for i in (0, 1)]
        print(f"{name:12} {wall:8.3f} {cpu:8.3f} {added[0]:+13.3f} {added[1]:+12.3f}")
    pairs = list(zip(runs["aliascheck"], runs["plain"], strict=True))
    wall_ratio, cpu_ratio = (statistics.median(a[i] / p[i] for a, p in pairs) for i in (0, 1))
    print(f"--aliascheck / plain: wall {wall_ratio:.3f}x, cpu {cpu_ratio:.3f}x (goal: <= 0.1 s added)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
