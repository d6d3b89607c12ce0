"""Loader(Prefetcher(Batcher(source))): the resumed loader skips batches (meta-pytorch/data PR #1547)."""

from torchdata.nodes import BaseNode, Batcher, Loader, Prefetcher


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


def make_loader():
    return Loader(Prefetcher(Batcher(LiveSource(40), batch_size=2), prefetch_factor=2))


loader = make_loader()
batches = iter(loader)
assert next(batches) == [0, 1]
checkpoint = loader.state_dict()  # "resume after batch [0, 1]"
for _ in range(3):  # training goes on; the checkpoint is written later
    next(batches)

resumed = make_loader()
resumed.load_state_dict(checkpoint)
batch = next(iter(resumed))
print(f"resumed with batch {batch}, expected [2, 3]")
assert batch != [2, 3], "the bug did not reproduce"
