"""The same resume with a source whose get_state() returns a copy: upstream's ParallelMapper is then right."""

from torchdata.nodes import BaseNode, ParallelMapper


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


def pipeline():
    return ParallelMapper(CopyingSource(10), map_fn=str, num_workers=2, snapshot_frequency=1)


node = pipeline()
assert next(node) == "0"
state = node.state_dict()
for _ in range(3):
    next(node)

restored = pipeline()
restored.reset(state)
resumed = int(next(restored))
print(f"resumed at item {resumed}, expected 1")
assert resumed == 1
