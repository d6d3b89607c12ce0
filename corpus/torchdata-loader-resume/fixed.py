"""The same resume with a source whose get_state() returns a copy: the loader resumes at [2, 3]."""

from torchdata.nodes import BaseNode, Batcher, Loader, Prefetcher


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


def make_loader():
    return Loader(Prefetcher(Batcher(CopyingSource(40), batch_size=2), prefetch_factor=2))


loader = make_loader()
batches = iter(loader)
assert next(batches) == [0, 1]
checkpoint = loader.state_dict()
for _ in range(3):
    next(batches)

resumed = make_loader()
resumed.load_state_dict(checkpoint)
batch = next(iter(resumed))
print(f"resumed with batch {batch}, expected [2, 3]")
assert batch == [2, 3]
