"""What zero-configuration discovery costs: class creation under the hook, and the start-up scan.

    python benchmarks/bench_discovery.py [--rounds N] [--quick]

- ``class``: making 2,000 classes (half of them stateful) with a ``class`` statement,
  without a session, and with a session whose discovery hook is on (the classes in
  scope, so the stateful ones are instrumented too). Per class, and the ratio.
- ``scan``: ``Discovery.start()`` over every module imported (torch, torchdata, this
  script: the project scope keeps only this script's directory), against importing
  nothing at all: the fixed cost a session start pays.

Medians of interleaved rounds; ratios from one run are what to compare.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch  # noqa: F401  (imported: the scan walks a realistic sys.modules)
import torchdata.nodes  # noqa: F401

from aliascheck.config import Options
from aliascheck.discovery import Discovery
from aliascheck.session import Session

CLASSES = 2000
SOURCE = '''
for i in range(N):
    class Plain:
        def method(self):
            return 1

    class Stateful:
        def __init__(self):
            self.s = {"n": i}

        def state_dict(self):
            return self.s

        def load_state_dict(self, sd):
            self.s = dict(sd)
'''
CODE = compile(SOURCE.replace("N", str(CLASSES // 2)), __file__, "exec")  # in scope: this file


def make_classes() -> float:
    start = time.perf_counter()
    exec(CODE, {})
    return time.perf_counter() - start


def with_session() -> float:
    session = Session(Options(enabled=True, roots=(os.path.dirname(os.path.abspath(__file__)),)))
    session.start()
    try:
        return make_classes()
    finally:
        session.stop()


def scan() -> float:
    discovery = Discovery("project", [os.path.dirname(os.path.abspath(__file__))])
    start = time.perf_counter()
    discovery.start()
    elapsed = time.perf_counter() - start
    discovery.stop()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    plain, hooked, scans = [], [], []
    for _ in range(rounds):  # interleaved
        plain.append(make_classes())
        hooked.append(with_session())
        scans.append(scan())
    p, h, s = statistics.median(plain), statistics.median(hooked), statistics.median(scans)
    print(f"class statements ({CLASSES}, half stateful), medians of {rounds} rounds:")
    print(f"  plain       {p * 1e3:8.2f} ms  ({p / CLASSES * 1e6:.2f} us per class)")
    print(f"  discovery   {h * 1e3:8.2f} ms  ({h / CLASSES * 1e6:.2f} us per class)   ratio {h / p:.2f}")
    print(f"start-up scan of {len(__import__('sys').modules)} imported modules: {s * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
