"""The mocks adapter's added cost per mock call, as ratios to the plain call.

    python benchmarks/bench_mocks.py [--rounds N] [--calls N]

Each shape is timed three ways in interleaved rounds: plain (no session: ``unittest.mock`` as
shipped), installed while no test records (between tests: one global read), and recording
(inside a test of a ``Session`` whose project is this directory). Shapes:

- ``no args``: ``m()``;
- ``atoms``: ``m(1, "a", key=2.0)`` (nothing judged: no fingerprint);
- ``dict``: ``m({"id": i, "tags": ["a"]})`` of one dict (fingerprinted as the call returns);
- ``object``: ``m(obj)`` of an instance (compared by identity: not judged);
- ``read``: ``m.call_args`` after one recorded ``dict`` call (a read alone judges nothing);
- ``compare``: ``m.call_args == call(payload)`` of that call (the judge at each comparison).

Prints ns per call (medians over rounds) and each mode's ratio to plain. Absolute times drift
20% between runs; compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable
from typing import Any
from unittest import mock

from bench_caches import per_call, report

from aliascheck.config import Options
from aliascheck.session import Session

HERE = os.path.dirname(os.path.abspath(__file__))


class Job:
    def __init__(self) -> None:
        self.name = "build"


def shapes() -> dict[str, Callable[[], Any]]:
    m, job, payload = mock.Mock(), Job(), {"id": 1, "tags": ["a"]}
    reader = mock.Mock()
    reader(payload)
    expected = mock.call({"id": 1, "tags": ["a"]})
    return {
        "no args": lambda: m(),
        "atoms": lambda: m(1, "a", key=2.0),
        "dict": lambda: m(payload),
        "object": lambda: m(job),
        "read": lambda: reader.call_args,
        "compare": lambda: reader.call_args == expected,
    }


def measure(rounds: int, calls: int) -> dict[str, dict[str, float]]:
    names = list(shapes())
    samples: dict[str, dict[str, list[float]]] = {name: {} for name in names}
    for _ in range(rounds):
        plain = shapes()  # fresh mocks each round: their call lists grow with every call
        for name in names:
            samples[name].setdefault("plain", []).append(per_call(plain[name], calls))
        session = Session(Options(enabled=True, steps=0, roots=(HERE,)))
        session.start()
        session.adapters.refresh()  # installs the mocks adapter now, as the first test would
        try:
            assert "mocks" in session.adapters.installed, session.adapters.installed
            installed = shapes()
            for name in names:
                samples[name].setdefault("installed", []).append(per_call(installed[name], calls))
            session.begin_test("bench")
            recording = shapes()
            for name in names:
                samples[name].setdefault("recording", []).append(per_call(recording[name], calls))
            found = session.end_test(0)
            assert not found, found  # nothing was changed after a call: no finding
        finally:
            session.stop()
    return {name: {k: statistics.median(v) for k, v in by.items()} for name, by in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=5_000)
    args = parser.parse_args(argv)
    report(measure(args.rounds, args.calls))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
