"""The same reader with a get_state() that builds a new dict of its position: the resume is right."""

from torchdata.nodes import BaseNode, Batcher, Loader


class ShardReader(BaseNode):
    """Reads `per_shard` records from each of `shards` shards."""

    def __init__(self, shards, per_shard):
        super().__init__()
        self.shards, self.per_shard = shards, per_shard

    def reset(self, initial_state=None):
        super().reset(initial_state)
        self.shard, self.offset = 0, 0
        if initial_state is not None:
            self.shard, self.offset = initial_state["shard"], initial_state["offset"]

    def next(self):
        if self.offset == self.per_shard:
            self.shard, self.offset = self.shard + 1, 0
        if self.shard == self.shards:
            raise StopIteration
        self.offset += 1
        return f"{self.shard}:{self.offset - 1}"

    def get_state(self):
        return {"shard": self.shard, "offset": self.offset}


def make_loader():
    return Loader(Batcher(ShardReader(shards=3, per_shard=4), batch_size=2))


loader = make_loader()
batches = iter(loader)
assert next(batches) == ["0:0", "0:1"]
checkpoint = loader.state_dict()
next(batches)

resumed = make_loader()
resumed.load_state_dict(checkpoint)
batch = next(iter(resumed))
print(f"resumed with batch {batch}, expected ['0:2', '0:3']")
assert batch == ["0:2", "0:3"]
