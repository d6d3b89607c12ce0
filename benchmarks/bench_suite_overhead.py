"""`pytest --aliascheck` against plain `pytest` on torchdata 0.11's own `test/nodes` suite.

    python benchmarks/bench_suite_overhead.py [--suite DIR] [--rounds N] [--quick] [-- PYTEST ARGS ...]

The suite is not vendored. Get it once (only `test/` of the v0.11.0 tag, outside this repo), plus the two
test-only dependencies it imports (`parameterized`, and `expecttest` through torch.testing._internal),
installed into a side directory rather than the project venv:

    git clone --filter=blob:none https://github.com/meta-pytorch/data /tmp/torchdata-src   # or any clone
    mkdir -p /tmp/tdsuite && git -C /tmp/torchdata-src archive v0.11.0 test | tar -x -C /tmp/tdsuite
    .venv/bin/pip install --target /tmp/tdsuite/_deps parameterized expecttest

The tests run against the INSTALLED torchdata (0.11.0), not a source checkout. `DIR/_deps` is put on
PYTHONPATH for both runs; OMP_NUM_THREADS/MKL_NUM_THREADS default to 1 (see PERF-NOTES). Default pytest
arguments (replace them with everything after `--`):

    test/nodes -q -p no:cacheprovider --timeout 300 --timeout-method thread -k "<DEFAULT_K>"

DEFAULT_K deselects (1) every `*process*` test: ParallelMapper with method="process" and a forkserver
context, 10-45 s each, mostly waiting for worker start-up; the whole `test/nodes` takes >15 min with
them, and aliascheck cannot see into child processes anyway; (2) the three
`test_multi_node_weighted_large_sample_size_with_prefetcher` cases with
CYCLE_UNTIL_ALL_DATASETS_EXHAUSTED (`_2`, `_5`, `_8`, ~45 s each plain), to keep a plain run near two
minutes. CUDA tests skip themselves.

Both runs are whole subprocesses, interleaved (plain, aliascheck, plain, ...), medians of N rounds.
Test failures do not stop the benchmark: under `--aliascheck` some torchdata tests fail with a finding,
so pass/fail counts of each run are printed next to the times. Reported: the whole-run wall-time ratio
(goal <= 1.10), the ratio of time spent in the tests themselves (JUnit XML, excludes interpreter start,
imports and collection), and that ratio per test module.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from bytecode import compile_aliascheck

GOAL = 1.10
DESELECT = ["process"] + [f"large_sample_size_with_prefetcher_{i}" for i in (2, 5, 8)]
DEFAULT_K = " and ".join(f"not {name}" for name in DESELECT)
DEFAULT_ARGS = ["test/nodes", "-q", "-p", "no:cacheprovider", "--timeout", "300", "--timeout-method", "thread",
                "-k", DEFAULT_K]
DEFAULT_ALIASCHECK = "--aliascheck"


class Run:
    def __init__(self, wall: float, in_tests: float, counts: dict[str, int], per_module: dict[str, float],
                 rc: int, summary: str) -> None:
        self.wall = wall
        self.in_tests = in_tests
        self.counts = counts
        self.per_module = per_module
        self.rc = rc
        self.summary = summary


def module_of(classname: str) -> str:
    parts = classname.split(".")
    for part in parts:
        if part.startswith("test_"):
            return part
    return classname


def parse_junit(xml: Path) -> tuple[float, dict[str, int], dict[str, float]]:
    counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    per_module: dict[str, float] = defaultdict(float)
    total = 0.0
    for case in ET.parse(xml).getroot().iter("testcase"):
        seconds = float(case.get("time", 0))
        total += seconds
        per_module[module_of(case.get("classname", ""))] += seconds
        children = {child.tag for child in case}
        if "failure" in children:
            counts["failed"] += 1
        elif "error" in children:
            counts["error"] += 1
        elif "skipped" in children:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return total, counts, dict(per_module)


def run(suite: Path, pytest_args: list[str], extra: list[str], tag: str, tmp: Path, env: dict[str, str]) -> Run:
    xml = tmp / f"junit-{tag}.xml"
    xml.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "pytest", "--rootdir", str(suite), f"--junitxml={xml}", *pytest_args, *extra]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    # 0 all passed, 1 some tests failed; anything else (usage error, internal error, interrupted) is fatal
    if proc.returncode not in (0, 1) or not xml.exists():
        raise SystemExit(f"pytest run failed ({tag}, rc={proc.returncode}):\n{shlex.join(cmd)}\n"
                         f"{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    in_tests, counts, per_module = parse_junit(xml)
    lines = proc.stdout.splitlines()
    summary = "\n".join(line for line in lines if line.startswith("aliascheck:"))
    finals = [line for line in lines if re.search(r"\d+ (passed|failed)", line)]
    if finals:
        summary = (summary + "\n" if summary else "") + finals[-1].strip("= ")
    return Run(wall, in_tests, counts, per_module, proc.returncode, summary)


def fmt_counts(counts: dict[str, int]) -> str:
    return " ".join(f"{counts[k]} {k}" for k in ("passed", "failed", "error", "skipped") if counts[k])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    pytest_args = DEFAULT_ARGS
    if "--" in argv:
        cut = argv.index("--")
        argv, pytest_args = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", type=Path, default=Path("/tmp/tdsuite"),
                        help="directory holding torchdata v0.11.0's test/ (see the module docstring)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="three rounds")
    parser.add_argument("--aliascheck-args", default=DEFAULT_ALIASCHECK,
                        help=f"options of the instrumented run (default {DEFAULT_ALIASCHECK!r}; "
                             "'--aliascheck --aliascheck-mode warn' lets the tests with findings run to the end)")
    args = parser.parse_args(argv)
    compile_aliascheck()  # as installed: see bytecode.py
    rounds = 3 if args.quick else args.rounds
    suite = args.suite.resolve()
    if not (suite / "test" / "nodes").is_dir():
        raise SystemExit(f"{suite}/test/nodes not found: export torchdata v0.11.0's test/ there, "
                         "see `python benchmarks/bench_suite_overhead.py --help` and this file's docstring")

    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    deps = suite / "_deps"
    if deps.is_dir():
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(deps), env.get("PYTHONPATH", "")) if p)

    variants = {"plain": [], "aliascheck": shlex.split(args.aliascheck_args)}
    print(f"suite {suite}; pytest {shlex.join(pytest_args)}")
    print(f"aliascheck run adds: {args.aliascheck_args}; {rounds} rounds, interleaved", flush=True)
    runs: dict[str, list[Run]] = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(rounds):
            for name, extra in variants.items():
                result = run(suite, pytest_args, extra, name, Path(tmp), env)
                runs[name].append(result)
                print(f"  round {i + 1} {name:10} wall {result.wall:7.1f} s  in tests {result.in_tests:7.1f} s  "
                      f"rc {result.rc}  {fmt_counts(result.counts)}", flush=True)

    med = {name: (statistics.median(r.wall for r in rs), statistics.median(r.in_tests for r in rs))
           for name, rs in runs.items()}
    print(f"\n{'run':12} {'wall s':>8} {'in tests s':>11}   ({rounds} rounds, medians)   tests (last round)")
    for name, (wall, in_tests) in med.items():
        print(f"{name:12} {wall:8.2f} {in_tests:11.2f}   {fmt_counts(runs[name][-1].counts)}")
    ratio = med["aliascheck"][0] / med["plain"][0]
    print(f"ratio wall {ratio:.3f} (goal <= {GOAL:.2f}: {'met' if ratio <= GOAL else 'NOT met'}), "
          f"in tests {med['aliascheck'][1] / med['plain'][1]:.3f}")

    modules = sorted(set().union(*(r.per_module for rs in runs.values() for r in rs)))
    print(f"\n{'module (in-test time)':42} {'plain s':>8} {'aliascheck s':>13} {'ratio':>6}")
    for module in modules:
        plain = statistics.median(r.per_module.get(module, 0.0) for r in runs["plain"])
        checked = statistics.median(r.per_module.get(module, 0.0) for r in runs["aliascheck"])
        print(f"{module:42} {plain:8.2f} {checked:13.2f} {checked / plain if plain else float('nan'):6.2f}")
    for name, rs in runs.items():
        if rs[-1].summary:
            print(f"\n{name}, last round:\n{rs[-1].summary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
