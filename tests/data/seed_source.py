"""The torchdata Prefetcher aliasing seed: a source whose get_state() returns its live dict."""

from torchdata.nodes import BaseNode


class MutableSource(BaseNode):
    def __init__(self, n, copy=False):
        super().__init__()
        self.n, self.copy = n, copy

    def reset(self, initial_state=None):
        super().reset(initial_state)
        self.state = dict(initial_state) if initial_state is not None else {"index": 0}

    def next(self):
        if self.state["index"] >= self.n:
            raise StopIteration
        item = self.state["index"]
        self.state["index"] += 1
        return item

    def get_state(self):
        # The bug: the live dict itself. The fix: dict(self.state).
        return dict(self.state) if self.copy else self.state
