"""StatefulDataLoader (num_workers=0) puts the dataset's state_dict() into its own uncopied: the checkpoint moves on."""

from torch.utils.data import IterableDataset
from torchdata.stateful_dataloader import StatefulDataLoader


class Records(IterableDataset):
    """Streams records 0..n-1; resumable through state_dict(), its position a dict it updates in place."""

    def __init__(self, n):
        self.n, self.pos = n, {"index": 0}

    def __iter__(self):
        return self

    def __next__(self):
        if self.pos["index"] == self.n:
            raise StopIteration
        self.pos["index"] += 1
        return self.pos["index"] - 1

    def state_dict(self):
        return self.pos  # the live position

    def load_state_dict(self, state):
        self.pos = dict(state)


loader = StatefulDataLoader(Records(12), batch_size=2, num_workers=0)
batches = iter(loader)
first = [next(batches).tolist() for _ in range(2)]  # [0, 1], [2, 3]
checkpoint = loader.state_dict()  # "resume after [2, 3]"
next(batches)  # training goes on; the checkpoint is written at the end of the epoch

resumed = StatefulDataLoader(Records(12), batch_size=2, num_workers=0)
resumed.load_state_dict(checkpoint)
batch = next(iter(resumed)).tolist()
print(f"read {first}, checkpointed; the resumed loader starts with {batch}, expected [4, 5]")
assert batch != [4, 5], "the bug did not reproduce"
