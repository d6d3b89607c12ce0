"""The initial snapshot is the source's live state too (meta-pytorch/data PR #1547, review).

With snapshot_frequency=0 the worker stores one snapshot, before its first item. The
checkpoint after item 0 is "that snapshot, then replay 1 item"; the snapshot is the
source's live dict, which has moved on by then.
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


node = Prefetcher(LiveSource(10), prefetch_factor=3, snapshot_frequency=0)
assert next(node) == 0
state = node.state_dict()  # {"snapshot": <taken before item 0>, "steps_since_snapshot": 1}
for _ in range(3):
    next(node)

restored = Prefetcher(LiveSource(10), prefetch_factor=3, snapshot_frequency=0)
restored.reset(state)
resumed = next(restored)
print(f"resumed at item {resumed}, expected 1")
assert resumed > 1, "the bug did not reproduce"
