"""torchdata's Prefetcher keeps its source's live state as the snapshot (meta-pytorch/data PR #1547).

The source returns its own state dict from get_state(). Prefetcher's worker stores
that dict, uncopied, as the snapshot of the item it just read, then steps the source
again: the checkpoint taken after item 0 says "after item 4 or later".
"""

from torchdata.nodes import BaseNode, Prefetcher


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
state = node.state_dict()  # "resume after item 0"
for _ in range(3):  # 3 more items: the worker has stepped the source at least 3 more times
    next(node)

restored = Prefetcher(LiveSource(10), prefetch_factor=3, snapshot_frequency=1)
restored.reset(state)
resumed = next(restored)
print(f"resumed at item {resumed}, expected 1")
assert resumed > 1, "the bug did not reproduce"
