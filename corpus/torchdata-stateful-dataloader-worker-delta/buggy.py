"""A dataset's state_dict() returns its live dict: in a StatefulDataLoader worker, its growth never
reaches the checkpoint.

The worker sends only what changed since the last snapshot (torchdata's _IncrementalState.generate_delta
compares the new state's leaves with the previous state's). The live list is the previous leaf too, so it
always compares equal to itself: the checkpoint keeps `done: []`. With num_workers=0 the same dataset checkpoints.
"""

from torch.utils.data import IterableDataset
from torchdata.stateful_dataloader import StatefulDataLoader


class Progress(IterableDataset):
    """Streams records 0..n-1 and remembers which it has produced; resumable through state_dict()."""

    def __init__(self, n):
        self.n = n
        self.state = {"done": []}

    def __iter__(self):
        for i in range(len(self.state["done"]), self.n):
            self.state["done"].append(i)
            yield i

    def state_dict(self):
        return self.state  # the live dict

    def load_state_dict(self, state):
        self.state = {"done": list(state["done"])}


def loader():
    return StatefulDataLoader(Progress(10), batch_size=1, num_workers=1, snapshot_every_n_steps=1)


if __name__ == "__main__":
    first = loader()
    it = iter(first)
    read = [next(it).item() for _ in range(5)]  # 0..4
    checkpoint = first.state_dict()
    del it

    resumed = loader()
    resumed.load_state_dict(checkpoint)
    rest = [b.item() for b in resumed]
    print(f"read {read}, checkpointed; the resumed loader yields {rest}, expected [5, ..., 9]")
    assert rest != list(range(5, 10)), "the bug did not reproduce"
