"""The same resume through torchdata's pin loop with a source whose get_state() returns a copy."""

import functools

from torchdata.nodes import BaseNode
from torchdata.nodes.map import _SingleThreadedMapper
from torchdata.nodes.pin_memory import _pin_memory_loop


class CopyingSource(BaseNode):
    """Yields 0..n-1; get_state() returns a copy of its state."""

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
        return dict(self.state)


def pinned(source, initial_state=None):
    worker = functools.partial(_pin_memory_loop, device_id=0, device=None)
    return _SingleThreadedMapper(source, prefetch_factor=1, worker=worker, snapshot_frequency=1,
                                 initial_state=initial_state)


loop = pinned(CopyingSource(10))
assert next(loop) == 0
state = loop.get_state()
for _ in range(3):
    next(loop)

restored = pinned(CopyingSource(10), state)
resumed = next(restored)
print(f"resumed at item {resumed}, expected 1")
assert resumed == 1
