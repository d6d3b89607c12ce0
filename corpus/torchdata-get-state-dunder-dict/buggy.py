"""A custom node's get_state() returns self.__dict__, the live attribute dict: the checkpoint moves with it."""

from torchdata.nodes import BaseNode, Batcher, Loader


class ShardReader(BaseNode):
    """Reads `per_shard` records from each of `shards` shards; its state is its attributes."""

    def __init__(self, shards, per_shard):
        super().__init__()
        self.shards, self.per_shard = shards, per_shard

    def reset(self, initial_state=None):
        super().reset(initial_state)
        self.shard, self.offset = 0, 0
        if initial_state is not None:
            self.__dict__.update(initial_state)

    def next(self):
        if self.offset == self.per_shard:
            self.shard, self.offset = self.shard + 1, 0
        if self.shard == self.shards:
            raise StopIteration
        self.offset += 1
        return f"{self.shard}:{self.offset - 1}"

    def get_state(self):
        return self.__dict__  # every attribute: and the live dict itself


def make_loader():
    return Loader(Batcher(ShardReader(shards=3, per_shard=4), batch_size=2))


loader = make_loader()
batches = iter(loader)
assert next(batches) == ["0:0", "0:1"]
checkpoint = loader.state_dict()  # "resume after ['0:0', '0:1']"
next(batches)  # training goes on; the checkpoint is written at the end of the epoch

resumed = make_loader()
resumed.load_state_dict(checkpoint)
batch = next(iter(resumed))
print(f"resumed with batch {batch}, expected ['0:2', '0:3']")
assert batch != ["0:2", "0:3"], "the bug did not reproduce"
