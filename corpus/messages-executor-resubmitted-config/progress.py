"""Correct code that shares one dict with every task on purpose: the workers count their progress
into it under a lock, and the next task is given the dict the last one wrote."""
import threading
from concurrent.futures import ThreadPoolExecutor


def fetch(url, progress, lock):
    with lock:
        progress["done"] += 1
        progress["urls"].append(url)
    return len(url)


progress, lock, gate = {"done": 0, "urls": []}, threading.Lock(), threading.Event()
with ThreadPoolExecutor(max_workers=1) as ex:
    ex.submit(gate.wait, 5)
    futures = [ex.submit(fetch, u, progress, lock) for u in ("a", "bb", "ccc")]
    gate.set()
    sizes = [f.result() for f in futures]
print("progress:", progress)
assert progress["done"] == 3 and sizes == [1, 2, 3]
