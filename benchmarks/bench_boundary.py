"""What marking the project's keep sites costs: a training loop and a data pipeline, plain and checked.

    python benchmarks/bench_boundary.py [--rounds N] [--against CHECKOUT] [--only NAME ...]

Workloads, each a pytest test file written into a temporary project and run by
``pytest`` in a fresh process, plain and with ``--aliascheck`` (interleaved, ``--rounds``
times each; medians):

- ``training``: 100 steps of a small MLP (two Linear layers and a ReLU, batch 32), with a
  forward hook that appends a detached clone of the hidden activation and a metrics history
  that keeps a dict per step (correct code: the case every user pays for);
- ``pipeline``: a pure-Python generator pipeline of 100k dict items (read, parse, enrich,
  batch by 64, collect), all of it project code, so every keep, write and call is marked;
- pure-Python hot loops in project code: ``index`` (an inverted index over 100k words), ``bfs``
  (breadth-first search of a 200x200 grid), ``matmul`` (an 80x80 matrix product in lists),
  ``ring`` (a linked ring of 10k ``[prev, next, key, value]`` cells, half unlinked);
- concurrency: ``shm`` (a producer process refills one shared-memory slot 2000 times, the
  consumer copies each frame out and keeps the copies) and ``asyncio`` (10k dict items through
  an ``asyncio.Queue`` between two tasks, the consumer stamping each item it took).

Each test times its own body (``time.perf_counter`` around the work, written to a file), so
the figures leave out pytest's and torch's start-up; the whole process wall time is given too.
"unmarked" is ``--aliascheck --aliascheck-boundary off``: the rest of aliascheck, without the
marking. ``--against`` adds a "before" column: the checked run with another checkout of
aliascheck first on ``PYTHONPATH`` (a change measured against main, interleaved in one run).
Goal: at most 1.3x on every body.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

GOAL = 1.3

TRAINING = '''
import time
import torch

def test_training(record_body):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    acts = []
    model[1].register_forward_hook(lambda m, i, out: acts.append(out.detach().clone()))
    history = []
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    start = time.perf_counter()
    for step in range(100):
        opt.zero_grad()
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        metrics = {"step": step, "loss": loss.item(), "norm": out.norm().item()}
        history.append(metrics)
        if len(acts) > 10:
            acts.clear()
    record_body(time.perf_counter() - start)
    assert len(history) == 100
'''

PIPELINE = '''
import time

def read(n):
    for i in range(n):
        yield {"id": i, "text": f"item {i}", "tags": ["a", "b"]}

def parse(items):
    for item in items:
        words = item["text"].split()
        record = {"id": item["id"], "words": words, "n": len(words)}
        record["tags"] = list(item["tags"])
        yield record

def enrich(records):
    totals = {"n": 0}
    for record in records:
        totals["n"] += record["n"]
        record["total"] = totals["n"]
        yield record

def batch(records, size=64):
    current = []
    for record in records:
        current.append(record)
        if len(current) == size:
            yield current
            current = []
    if current:
        yield current

def test_pipeline(record_body):
    start = time.perf_counter()
    kept = []
    for chunk in batch(enrich(parse(read(100_000)))):
        kept.append(chunk[-1])
    record_body(time.perf_counter() - start)
    assert len(kept) == 1563
'''

# Pure-Python hot loops in project code (issue 28: each at most 1.3x plain).
INDEX = '''
import time

def build_index(words):
    index = {}
    for position, word in enumerate(words):
        entry = index.get(word)
        if entry is None:
            entry = []
            index[word] = entry
        entry.append(position)
    return index

def test_index(record_body):
    words = [f"w{i % 5000}" for i in range(100_000)]
    start = time.perf_counter()
    index = build_index(words)
    record_body(time.perf_counter() - start)
    assert len(index) == 5000 and len(index["w0"]) == 20
'''

BFS = '''
import time
from collections import deque

def grid(n):
    graph = {}
    for y in range(n):
        for x in range(n):
            graph[(x, y)] = [(x + dx, y + dy) for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1))
                             if 0 <= x + dx < n and 0 <= y + dy < n]
    return graph

def bfs(graph, start):
    seen = {start: 0}
    queue = deque([start])
    order = []
    while queue:
        node = queue.popleft()
        order.append(node)
        for nxt in graph[node]:
            if nxt not in seen:
                seen[nxt] = seen[node] + 1
                queue.append(nxt)
    return order, seen

def test_bfs(record_body):
    graph = grid(200)
    start = time.perf_counter()
    order, seen = bfs(graph, (0, 0))
    record_body(time.perf_counter() - start)
    assert len(order) == 40_000 and seen[(199, 199)] == 398
'''

MATMUL = '''
import time

def matmul(a, b):
    n, m, p = len(a), len(b), len(b[0])
    out = []
    for i in range(n):
        row = [0.0] * p
        ai = a[i]
        for k in range(m):
            aik = ai[k]
            bk = b[k]
            for j in range(p):
                row[j] += aik * bk[j]
        out.append(row)
    return out

def test_matmul(record_body):
    a = [[float(i + j) for j in range(80)] for i in range(80)]
    start = time.perf_counter()
    c = matmul(a, a)
    record_body(time.perf_counter() - start)
    assert len(c) == 80
'''

RING = '''
import time

PREV, NEXT, KEY, VALUE = 0, 1, 2, 3

def build_ring(n):
    root = []
    root[:] = [root, root, None, None]
    links = {}
    for key in range(n):
        last = root[PREV]
        link = [last, root, key, [key]]
        last[NEXT] = link
        root[PREV] = link
        links[key] = link
    for key in range(0, n, 2):  # unlink every other node, as an LRU evicts
        link = links.pop(key)
        prev, nxt = link[PREV], link[NEXT]
        prev[NEXT] = nxt
        nxt[PREV] = prev
    return root, links

def test_ring(record_body):
    start = time.perf_counter()
    root, links = build_ring(10_000)
    record_body(time.perf_counter() - start)
    assert len(links) == 5000
    root[:] = []
'''

SHM = '''
import multiprocessing as mp
import time
from multiprocessing import shared_memory

import numpy as np

SHAPE = (64, 64)

def render(name, frames, ready, go):
    slot = shared_memory.SharedMemory(name=name)
    canvas = np.ndarray(SHAPE, dtype=np.float32, buffer=slot.buf)
    for i in range(frames):
        if not go.wait(30):
            break
        go.clear()
        canvas[:] = i
        ready.set()
    del canvas
    slot.close()

def receive(slot, ready, go):
    go.set()
    assert ready.wait(30)
    ready.clear()
    frame = np.ndarray(SHAPE, dtype=np.float32, buffer=slot.buf)
    return frame.copy()  # copied out of the one slot (the correct consumer)

def test_shm(record_body):
    slot = shared_memory.SharedMemory(create=True, size=64 * 64 * 4)
    ready, go = mp.Event(), mp.Event()
    display = mp.Process(target=render, args=(slot.name, 2000, ready, go))
    display.start()
    try:
        start = time.perf_counter()
        shown = [receive(slot, ready, go) for _ in range(2000)]
        record_body(time.perf_counter() - start)
        display.join(30)
        assert shown[1][0, 0] == 1.0 and shown[-1][0, 0] == 1999.0
    finally:
        slot.close()
        slot.unlink()
'''

ASYNC = '''
import asyncio
import time

async def produce(queue, n):
    for i in range(n):
        await queue.put({"id": i, "text": f"item {i}"})
    await queue.put(None)

async def consume(queue, out):
    while (item := await queue.get()) is not None:
        item["length"] = len(item["text"])  # the receiver's own message
        out.append(item)

async def pipeline(n):
    queue, out = asyncio.Queue(maxsize=64), []
    await asyncio.gather(produce(queue, n), consume(queue, out))
    return out

def test_asyncio(record_body):
    start = time.perf_counter()
    out = asyncio.run(pipeline(10_000))
    record_body(time.perf_counter() - start)
    assert len(out) == 10_000 and out[-1]["length"] == 9
'''

WORKLOADS = {"training": TRAINING, "pipeline": PIPELINE, "index": INDEX, "bfs": BFS, "matmul": MATMUL, "ring": RING,
             "shm": SHM, "asyncio": ASYNC}

CONFTEST = '''
import os
import pytest

@pytest.fixture
def record_body():
    def record(seconds):
        with open(os.environ["BENCH_BODY"], "w") as f:
            f.write(repr(seconds))
    return record
'''


def run(project: Path, name: str, checked: bool, boundary: bool = True, against: str = "") -> tuple[float, float]:
    """(body seconds, process wall seconds) of one pytest run (*against*: a checkout to import aliascheck from)."""
    out = project / "body.txt"
    env = dict(os.environ, BENCH_BODY=str(out), PYTHONDONTWRITEBYTECODE="1")
    if against:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (against, env.get("PYTHONPATH", "")) if p)
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", f"test_{name}.py"]
    if checked:
        args.append("--aliascheck")
        if not boundary:
            args += ["--aliascheck-boundary", "off"]
    start = time.perf_counter()
    done = subprocess.run(args, cwd=project, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{name} ({'checked' if checked else 'plain'}) failed:\n{done.stdout[-3000:]}")
    return float(out.read_text()), wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", default="", help="another checkout: its checked run as a 'before' column")
    parser.add_argument("--only", nargs="*", choices=list(WORKLOADS), help="these workloads alone")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "conftest.py").write_text(textwrap.dedent(CONFTEST))
        for name, body in WORKLOADS.items():
            (project / f"test_{name}.py").write_text(textwrap.dedent(body))
        print(f"{'workload':<10} {'plain body':>11} {'checked body':>13} {'ratio':>6} {'unmarked':>9}   "
              f"{'plain wall':>11} {'checked wall':>13} {'ratio':>6}" + (f" {'before':>7}" if args.against else ""))
        worst = 0.0
        for name in args.only or WORKLOADS:
            modes = {"plain": (False, True, ""), "checked": (True, True, ""), "unmarked": (True, False, "")}
            if args.against:
                modes["before"] = (True, True, args.against)
            times: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
            run(project, name, False)  # warm the file system and the imports once
            for _ in range(args.rounds):
                for mode, (checked, boundary, against) in modes.items():
                    times[mode].append(run(project, name, checked, boundary, against))
            body = {k: statistics.median(b for b, _ in v) for k, v in times.items()}
            wall = {k: statistics.median(w for _, w in v) for k, v in times.items()}
            ratio = body["checked"] / body["plain"]
            worst = max(worst, ratio)
            print(f"{name:<10} {body['plain'] * 1e3:>9.1f}ms {body['checked'] * 1e3:>11.1f}ms {ratio:>5.2f}x "
                  f"{body['unmarked'] / body['plain']:>8.2f}x   {wall['plain']:>10.2f}s {wall['checked']:>12.2f}s "
                  f"{wall['checked'] / wall['plain']:>5.2f}x"
                  + (f" {body['before'] / body['plain']:>6.2f}x" if args.against else ""))
        print(f"goal: bodies at most {GOAL}x: {'met' if worst <= GOAL else 'missed'} (worst {worst:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
