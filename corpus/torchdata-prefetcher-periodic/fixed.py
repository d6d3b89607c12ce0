"""The same resume with a source whose get_state() returns a copy: upstream's Prefetcher is then right.

This is the fix available on torchdata 0.11 today (PR #1547 is still open): what the
worker stores no longer aliases the source's live state.
"""

from torchdata.nodes import BaseNode, Prefetcher


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


node = Prefetcher(CopyingSource(10), prefetch_factor=3, snapshot_frequency=1)
assert next(node) == 0
state = node.state_dict()
for _ in range(3):
    next(node)

restored = Prefetcher(CopyingSource(10), prefetch_factor=3, snapshot_frequency=1)
restored.reset(state)
resumed = next(restored)
print(f"resumed at item {resumed}, expected 1")
assert resumed == 1
