"""The gotcha's fix: hand each task the value as it is at the submit (functools.partial there;
a dict of its own here)."""
import threading
from concurrent.futures import ThreadPoolExecutor


def score(gate, cfg):
    gate.wait(5)
    return cfg["w"] * 2


def sweep():
    gate = threading.Event()
    with ThreadPoolExecutor(max_workers=1) as ex:
        futures = [ex.submit(score, gate, {"w": w}) for w in range(3)]
        gate.set()
        return [f.result() for f in futures]


scores = sweep()
print("scores:", scores)
assert scores == [0, 2, 4]
