"""Correct code (named buggy.py only by the corpus format): a dataset whose load_state_dict() adopts the
state it is given, run in a forked StatefulDataLoader worker.

PeriodicStateIterableDataset is torchdata's own test dataset (test/stateful_dataloader/test_state_dict.py,
v0.11.0). Its load_state_dict() keeps the "state" dict it is given and its iterator flips entries of it.
In a worker process the state it is given is the worker's copy: the main process's checkpoint is
untouched, and resuming from it twice gives the same batches twice.
"""

import copy

from torch.utils.data import IterableDataset
from torchdata.stateful_dataloader import StatefulDataLoader


class PeriodicStateIterableDataset(IterableDataset):
    def __init__(self):
        self.state = {0: 0, 1: 0, 2: 0, 3: 0}
        self.step = 0
        self.limit = 12

    def __iter__(self):
        for _ in range(self.step, self.limit):
            self.step += 1
            y = self.state[self.step % len(self.state)]
            self.state[self.step % len(self.state)] = 1 - y
            yield self.state[self.step % len(self.state)]

    def state_dict(self):
        return {"state": self.state, "step": self.step}

    def load_state_dict(self, state):
        self.state = state["state"]  # adopted: in a worker process this is the worker's own copy
        self.step = state["step"]


def identity(x):
    return x


def loader():
    return StatefulDataLoader(PeriodicStateIterableDataset(), batch_size=1, collate_fn=identity, num_workers=1,
                              multiprocessing_context="fork", snapshot_every_n_steps=1)


if __name__ == "__main__":
    first = loader()
    it = iter(first)
    read = [next(it) for _ in range(5)]
    checkpoint = first.state_dict()
    taken = copy.deepcopy(checkpoint)
    expected = list(it)  # the rest of the uninterrupted run
    del it

    runs = []
    for _ in range(2):  # resume twice from the same checkpoint (a retry)
        resumed = loader()
        resumed.load_state_dict(checkpoint)
        runs.append(list(resumed))
        del resumed

    print(f"read {read}; uninterrupted rest {expected}; resumed twice {runs}")
    assert checkpoint == taken
    assert runs == [expected, expected]
