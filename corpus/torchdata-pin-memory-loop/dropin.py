"""The same resume through aliascheck.nodes' pin loop, which copies each snapshot in the worker.

These are the worker and iterator aliascheck.nodes.PinMemory builds in reset(), driven
directly, as upstream's are in buggy.py, because the node's constructor needs CUDA.
"""

import functools

from torchdata.nodes import BaseNode

from aliascheck.nodes._feed import pin_memory_loop
from aliascheck.nodes._iters import SingleThreadedMapper


class LiveSource(BaseNode):
    """Yields 0..n-1; get_state() returns the dict that next() updates."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def reset(self, initial_state=None):
        super().reset(initial_state)
        self.state = dict(initial_state) if initial_state is not None else {"index": 0}

    def next(self):
        if self.state["index"] >= self.n:
            raise StopIteration
        self.state["index"] += 1
        return self.state["index"] - 1

    def get_state(self):
        return self.state


def pinned(source, initial_state=None):
    worker = functools.partial(pin_memory_loop, device_id=0, device=None)
    return SingleThreadedMapper(source, 1, worker, 1, initial_state)


loop = pinned(LiveSource(10))
assert next(loop) == 0
state = loop.get_state()
for _ in range(3):
    next(loop)

restored = pinned(LiveSource(10), state)
resumed = next(restored)
print(f"resumed at item {resumed}, expected 1")
assert resumed == 1
