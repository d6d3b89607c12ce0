"""The source's get_state() returns a new dict, the node hands out a copy of its cache: the resume is right."""

import copy

from torchdata.nodes import BaseNode

_NONE = object()


class Records(BaseNode):
    """Reads records 0..n-1; its position is a dict it updates in place."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def reset(self, initial_state=None):
        super().reset(initial_state)
        self.pos = {"offset": 0} if initial_state is None else dict(initial_state)

    def next(self):
        if self.pos["offset"] == self.n:
            raise StopIteration
        self.pos["offset"] += 1
        return self.pos["offset"] - 1

    def get_state(self):
        return {"offset": self.pos["offset"]}


class Peekable(BaseNode):
    """peek() shows the next item without taking it; its state is the source's state before the peek
    (torchdata's LoaderIterator.has_next and Unbatcher cache state the same way)."""

    def __init__(self, source):
        super().__init__()
        self.source = source

    def reset(self, initial_state=None):
        super().reset(initial_state)
        self.source.reset(None if initial_state is None else initial_state["source"])
        self._peeked, self._state_before_peek = _NONE, None

    def peek(self):
        if self._peeked is _NONE:
            self._state_before_peek = self.source.state_dict()  # where the source was ...
            self._peeked = next(self.source)  # ... before the item pulled ahead
        return self._peeked

    def next(self):
        if self._peeked is _NONE:
            return next(self.source)
        item, self._peeked, self._state_before_peek = self._peeked, _NONE, None
        return item

    def get_state(self):
        if self._state_before_peek is not None:  # the peeked item has not been taken yet
            return {"source": copy.deepcopy(self._state_before_peek)}  # editing it cannot corrupt the cache
        return {"source": self.source.state_dict()}


node = Peekable(Records(10))
node.reset()
taken = [next(node) for _ in range(3)]  # 0, 1, 2
assert node.peek() == 3  # looked at, not taken: the epoch ends here
checkpoint = node.state_dict()  # "the next item is 3"

resumed = Peekable(Records(10))
resumed.reset(checkpoint)
first = next(resumed)
print(f"took {taken}, peeked at 3, checkpointed; the resumed run starts at {first}, expected 3")
assert first == 3
