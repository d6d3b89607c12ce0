"""The messages adapter's cost per message: 100k small messages with it installed, relative to without.

    python benchmarks/bench_messages.py [--rounds N] [--messages N] [--quick]

Each run puts N messages on a fresh channel and then takes them all off, in one thread
(``multiprocessing.Queue``'s feeder thread pickles and sends them meanwhile, as it does
for any user). Three ways, in interleaved rounds:

- plain: no aliascheck at all;
- dormant: the adapter installed, no test running (what a session costs between tests);
- checked: inside a test of a ``Session(Options(enabled=True, steps=0))``, teardown
  included (it judges every message still recorded: all of them for multiprocessing).

Messages: ``(i, "x")`` (immutable: skipped by type, no record) and ``{"i": i}`` (mutable:
recorded, judged at receipt or at feed and teardown). The goal (issue 11) is at most 1.5x
plain for small messages through ``queue.Queue`` and ``multiprocessing.Queue``; a ratio
above it is marked MISSED. Medians of interleaved rounds; absolute times drift 20% between
runs, compare the ratios of one run.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import queue
import statistics
import time
from collections.abc import Callable
from typing import Any

from aliascheck.config import Options
from aliascheck.session import Session

GOAL = 1.5
MESSAGES: dict[str, Callable[[int], Any]] = {
    "tuple": lambda i: (i, "x"),
    "dict": lambda i: {"i": i},
}


def through_queue(messages: list[Any]) -> None:
    q: queue.Queue[Any] = queue.Queue()
    for m in messages:
        q.put(m)
    for _ in messages:
        q.get()


def through_mp_queue(messages: list[Any]) -> None:
    q: Any = multiprocessing.Queue()
    for m in messages:
        q.put(m)
    for _ in messages:
        q.get()
    q.close()
    q.join_thread()


CHANNELS: dict[str, Callable[[list[Any]], None]] = {"queue.Queue": through_queue,
                                                     "multiprocessing.Queue": through_mp_queue}


def timed(fn: Callable[[], Any]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def plain(channel: Callable[[list[Any]], None], messages: list[Any]) -> float:
    return timed(lambda: channel(messages))


def dormant(channel: Callable[[list[Any]], None], messages: list[Any]) -> float:
    session = Session(Options(enabled=True, steps=0))
    session.start()
    try:
        session.begin_test("bench")  # installs the adapters
        session.end_test(0)
        return timed(lambda: channel(messages))
    finally:
        session.stop()


def checked(channel: Callable[[list[Any]], None], messages: list[Any]) -> float:
    session = Session(Options(enabled=True, steps=0))
    session.start()
    try:
        session.begin_test("bench")

        def run() -> None:
            channel(messages)
            found = session.end_test(0)
            assert not found, found

        elapsed = timed(run)
        mutable = not isinstance(messages[0], tuple)
        assert session.stats.handovers == (len(messages) if mutable else 0), session.stats
        return elapsed
    finally:
        session.stop()


def measure(rounds: int, n: int) -> dict[tuple[str, str], dict[str, float]]:
    samples: dict[tuple[str, str], dict[str, list[float]]] = {}
    runs = {"plain": plain, "dormant": dormant, "checked": checked}
    for r in range(rounds):
        for channel_name, channel in CHANNELS.items():
            for kind, make in MESSAGES.items():
                messages = [make(i) for i in range(n)]
                names = list(runs)
                for name in names[r % len(names):] + names[: r % len(names)]:  # interleaved, rotated
                    t = runs[name](channel, messages)
                    samples.setdefault((channel_name, kind), {}).setdefault(name, []).append(t)
    return {key: {k: statistics.median(v) for k, v in by.items()} for key, by in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 rounds of 10k messages")
    args = parser.parse_args(argv)
    rounds, n = (2, 10_000) if args.quick else (args.rounds, args.messages)
    medians = measure(rounds, n)
    print(f"{n} messages, medians of {rounds} interleaved rounds (ratio = time / plain, goal <= {GOAL})")
    print(f"{'channel':24}{'message':9}{'plain ms':>10}{'dormant':>10}{'checked':>10}{'us/msg added':>14}")
    for (channel, kind), m in medians.items():
        base = m["plain"]
        ratio = m["checked"] / base
        added = (m["checked"] - base) / n * 1e6
        print(f"{channel:24}{kind:9}{base * 1e3:10.1f}{m['dormant'] / base:10.2f}{ratio:10.2f}{added:14.2f}"
              f"{' MISSED' if ratio > GOAL else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
