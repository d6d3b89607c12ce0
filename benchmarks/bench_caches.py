"""The caches adapter's added cost per cached call and per shallow copy, as ratios to the plain call.

    python benchmarks/bench_caches.py [--rounds N] [--calls N]

Each shape is timed three ways in interleaved rounds: plain (the stdlib's own
``lru_cache``/``copy.copy``/``dataclasses.replace``, no session), installed while no
test records (between tests: one global read), and recording (inside a test of a
``Session`` whose project is this directory). Shapes:

- ``hit int``: an ``lru_cache`` hit returning an int (let through by type);
- ``hit dict``: a hit returning a judged 4-key dict (fingerprinted and compared per hit);
- ``hit store``: a hit returning a cached empty dict (a store: never judged);
- ``hit dict (old)``: the same dict from a cache made before the install (misses read
  from ``cache_info()``);
- ``copy.copy``: a 3-attribute instance sharing one list with its copy (the copy dies at
  once: its pair is judged at that death);
- ``copy dict``: ``copy.copy`` of a dict (let through by type);
- ``copy (library)``: ``copy.copy`` called from a file under site-packages (out of scope);
- ``replace``: ``dataclasses.replace`` of a 3-field dataclass sharing one list.

Prints ns per call (medians over rounds) and each mode's ratio to plain. Absolute
times drift 20% between runs; compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import functools
import gc
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from aliascheck.config import Options
from aliascheck.session import Session

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = os.path.join(HERE, "site-packages", "vendored.py")  # a path outside the project scope


class Job:
    def __init__(self) -> None:
        self.name, self.tags, self.attempts = "build", ["ci"], 0


@dataclasses.dataclass
class Settings:
    name: str
    paths: list
    retries: int = 3


def cached(lru: Any) -> dict[str, tuple[Any, tuple[Any, ...]]]:
    """Cached functions made by *lru* (the plain or the watched lru_cache) and their arguments, each
    called once (a miss)."""

    @lru(maxsize=None)
    def number(n: int) -> int:
        return n * 2

    @lru(maxsize=None)
    def config(path: str) -> dict[str, Any]:
        return {"path": path, "debug": False, "level": 3, "plugins": ["core"]}

    @lru(maxsize=None)
    def registry() -> dict[str, Any]:
        return {}

    made = {"hit int": (number, (7,)), "hit dict": (config, ("a.json",)), "hit store": (registry, ())}
    for fn, args in made.values():
        fn(*args)
    return made


def bound(made: dict[str, tuple[Any, tuple[Any, ...]]]) -> dict[str, Callable[[], Any]]:
    return {name: functools.partial(fn, *args) for name, (fn, args) in made.items()}


def copies(replace: Any, copier: Any) -> dict[str, Callable[[], Any]]:
    job, settings, plain_dict = Job(), Settings("a", ["/etc"]), {"a": 1, "b": [2]}
    namespace: dict[str, Any] = {"copy": copier}
    exec(compile("def library(obj):\n    return copy(obj)\n", LIBRARY, "exec"), namespace)
    library = namespace["library"]
    return {
        "copy.copy": lambda: copier(job),
        "copy dict": lambda: copier(plain_dict),
        "copy (library)": lambda: library(job),
        "replace": lambda: replace(settings, name="b"),
    }


def per_call(fn: Callable[[], Any], calls: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def measure(rounds: int, calls: int) -> dict[str, dict[str, float]]:
    plain = {**bound(cached(functools.lru_cache)), **copies(dataclasses.replace, copy.copy)}
    before = cached(functools.lru_cache)["hit dict"][0]  # a cache made before the install
    session = Session(Options(enabled=True, steps=0, roots=(HERE,)))
    session.start()
    session.adapters.refresh()  # installs the caches adapter now, as the first test would
    try:
        from aliascheck.plugins.caches import _replacement

        made = cached(functools.lru_cache)
        assert hasattr(made["hit dict"][0], "__aliascheck_cache__"), "the cache was not watched"
        watched = {**bound(made), **copies(dataclasses.replace, copy.copy)}
        plain["hit dict (old)"] = plain["hit dict"]
        watched["hit dict (old)"] = functools.partial(_replacement(before, {}), "a.json")
        samples: dict[str, dict[str, list[float]]] = {name: {} for name in plain}
        for _ in range(rounds):
            for name in plain:
                samples[name].setdefault("plain", []).append(per_call(plain[name], calls))
                samples[name].setdefault("installed", []).append(per_call(watched[name], calls))
                session.begin_test("bench")
                samples[name].setdefault("recording", []).append(per_call(watched[name], calls))
                found = session.end_test(0)
                assert not found, found  # nothing was edited: no finding
    finally:
        session.stop()
    return {name: {k: statistics.median(v) for k, v in by.items()} for name, by in samples.items()}


def report(medians: dict[str, dict[str, float]]) -> None:
    """The table of ns per call and ratios to plain, a row per shape (also bench_mocks.py's)."""
    print(f"{'shape':16}{'plain ns':>10}{'installed ns':>14}{'ratio':>7}{'recording ns':>14}{'ratio':>8}")
    for name, m in medians.items():
        base = m["plain"]
        print(f"{name:16}{base * 1e9:10.0f}{m['installed'] * 1e9:14.0f}{m['installed'] / base:7.2f}"
              f"{m['recording'] * 1e9:14.0f}{m['recording'] / base:8.2f}")
    print("(installed: between tests, one global read; recording: inside a test; ratio = mode / plain)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20_000)
    args = parser.parse_args(argv)
    report(measure(args.rounds, args.calls))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
