"""MultiNodeWeightedSampler.reset(state) keeps the checkpoint's datasets_exhausted dict and writes into it.

A checkpoint kept in memory (to retry a failed step, or to restore again later) is changed by
the sampler restored from it: restoring twice from the same checkpoint gives different runs.
"""

import copy

from torchdata.nodes import BaseNode, MultiNodeWeightedSampler


class Numbers(BaseNode):
    """Yields start..start+n-1; its state is a fresh dict (nothing wrong here)."""

    def __init__(self, start, n):
        super().__init__()
        self.start, self.n = start, n

    def reset(self, initial_state=None):
        super().reset(initial_state)
        self.i = 0 if initial_state is None else initial_state["i"]

    def next(self):
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        return self.start + self.i - 1

    def get_state(self):
        return {"i": self.i}


def make_sampler():
    return MultiNodeWeightedSampler({"a": Numbers(0, 2), "b": Numbers(100, 6)}, {"a": 1.0, "b": 1.0}, seed=0)


sampler = make_sampler()
next(sampler)
checkpoint = sampler.state_dict()  # kept, as a trainer keeps its last checkpoint
taken = copy.deepcopy(checkpoint["datasets_exhausted"])

first = make_sampler()
first.reset(checkpoint)
first_run = list(first)  # to the end: a source that runs out is marked exhausted ... in the checkpoint

again = make_sampler()
again.reset(checkpoint)  # the same checkpoint, restored a second time
second_run = list(again)

print(f"checkpoint taken with datasets_exhausted={taken}, now {checkpoint['datasets_exhausted']}")
print(f"first restore: {first_run}\nsecond restore: {second_run}")
assert checkpoint["datasets_exhausted"] != taken and first_run != second_run, "the bug did not reproduce"
