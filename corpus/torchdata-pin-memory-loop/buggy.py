"""PinMemory's loop keeps its source's live state as the snapshot (meta-pytorch/data PR #1547, review).

PinMemory(source) needs CUDA to be built; its worker does not. This drives the same
worker the way PinMemory.reset() does, on the CPU: items that need no pinning.
"""

import functools

from torchdata.nodes import BaseNode
from torchdata.nodes.map import _SingleThreadedMapper
from torchdata.nodes.pin_memory import _pin_memory_loop


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
    """What PinMemory(source, snapshot_frequency=1).reset(initial_state) builds, on device None."""
    worker = functools.partial(_pin_memory_loop, device_id=0, device=None)
    return _SingleThreadedMapper(source, prefetch_factor=1, worker=worker, snapshot_frequency=1,
                                 initial_state=initial_state)


loop = pinned(LiveSource(10))
assert next(loop) == 0
state = loop.get_state()
for _ in range(3):
    next(loop)

restored = pinned(LiveSource(10), state)
resumed = next(restored)
print(f"resumed at item {resumed}, expected 1")
assert resumed > 1, "the bug did not reproduce"
