"""state_dict() copies the slice: the checkpoint keeps the indices that were left."""

import numpy as np


class EpochShuffler:
    """Yields 0..n-1 in a new random order each epoch; resumable mid-epoch."""

    def __init__(self, n, seed=0):
        self.rng = np.random.default_rng(seed)
        self.order = np.arange(n)
        self.rng.shuffle(self.order)
        self.pos = 0

    def __next__(self):
        if self.pos == len(self.order):
            self.rng.shuffle(self.order)  # a new epoch, shuffled in place
            self.pos = 0
        self.pos += 1
        return int(self.order[self.pos - 1])

    def state_dict(self):
        return {"remaining": self.order[self.pos:].copy()}

    def load_state_dict(self, state):
        self.order = np.array(state["remaining"])
        self.pos = 0


sampler = EpochShuffler(6)
first = [next(sampler) for _ in range(2)]
checkpoint = sampler.state_dict()  # the 4 indices left in this epoch
expected = [int(i) for i in checkpoint["remaining"]]
for _ in range(6):  # training goes on into the next epoch before the checkpoint is written
    next(sampler)

resumed = EpochShuffler(6)
resumed.load_state_dict(checkpoint)
order = [next(resumed) for _ in range(4)]
print(f"resumed with {order}, expected {expected}")
assert order == expected
