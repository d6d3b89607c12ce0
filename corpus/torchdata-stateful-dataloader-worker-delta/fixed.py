"""The dataset's state_dict() returns a copy: the StatefulDataLoader worker's delta carries its growth
to the checkpoint."""

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
        return {"done": list(self.state["done"])}  # a copy

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
    assert rest == list(range(5, 10))
