"""The same resume with aliascheck.nodes.Prefetcher, which copies each snapshot in the worker.

The source still returns its live dict (any other keeper of its state_dict() would see it
move), but the node copies it at once and nobody keeps the original: the resume is right,
and aliascheck finds nothing anyone still holds to warn about.
"""

from torchdata.nodes import BaseNode

from aliascheck.nodes import Prefetcher


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


node = Prefetcher(LiveSource(10), prefetch_factor=3, snapshot_frequency=1)
assert next(node) == 0
state = node.state_dict()
for _ in range(3):
    next(node)

restored = Prefetcher(LiveSource(10), prefetch_factor=3, snapshot_frequency=1)
restored.reset(state)
resumed = next(restored)
print(f"resumed at item {resumed}, expected 1")
assert resumed == 1
