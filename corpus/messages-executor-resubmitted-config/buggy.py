"""The "Python concurrency gotcha" (vmax.dev): a value changed in the submitting loop before the
task gets to read it. Here a sweep submits one config dict, set for each weight in turn: the tasks
still queued when the loop moves on score the last weight. Ordered with an Event the single worker
waits on (no sleeps), so the first call holds the worker while the loop submits and changes."""
import threading
from concurrent.futures import ThreadPoolExecutor


def score(gate, cfg):
    gate.wait(5)
    return cfg["w"] * 2


def sweep():
    gate, cfg = threading.Event(), {"w": 0}
    with ThreadPoolExecutor(max_workers=1) as ex:
        futures = []
        for w in range(3):
            cfg["w"] = w
            futures.append(ex.submit(score, gate, cfg))
        gate.set()
        return [f.result() for f in futures]


scores = sweep()
print("scores:", scores)
assert scores == [4, 4, 4], "the bug did not reproduce"
