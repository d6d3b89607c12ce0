"""Two aliasing nodes: one hands out its live history, one keeps (and writes into) the state it was given."""

from torchdata.nodes import BaseNode


class History(BaseNode[int]):
    """get_state() returns the live dict whose list grows with every item."""

    def __init__(self, source: BaseNode[int]) -> None:
        super().__init__()
        self.source = source

    def reset(self, initial_state: dict | None = None) -> None:
        super().reset(initial_state)
        self.source.reset(None if initial_state is None else initial_state["source"])
        self.state = {"seen": [] if initial_state is None else list(initial_state["seen"])}

    def next(self) -> int:
        item = next(self.source)
        self.state["seen"].append(item)
        return item

    def get_state(self) -> dict:
        self.state["source"] = self.source.state_dict()
        return self.state  # the bug: the live dict


class Tally(BaseNode[int]):
    """reset(state) keeps the caller's counts dict and then counts into it."""

    def __init__(self, source: BaseNode[int], buckets: int) -> None:
        super().__init__()
        self.source, self.buckets = source, buckets

    def reset(self, initial_state: dict | None = None) -> None:
        super().reset(initial_state)
        self.source.reset(None if initial_state is None else initial_state["source"])
        self.counts = {b: 0 for b in range(self.buckets)} if initial_state is None else initial_state["counts"]

    def next(self) -> int:
        item = next(self.source)
        self.counts[item % self.buckets] += 1
        return item

    def get_state(self) -> dict:
        return {"source": self.source.state_dict(), "counts": dict(self.counts)}


class _Scratch(BaseNode[int]):
    """Private, and aliasing too: left out unless --include-private."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def reset(self, initial_state: dict | None = None) -> None:
        super().reset(initial_state)
        self.state = {"seen": []}

    def next(self) -> int:
        if len(self.state["seen"]) >= self.n + 4:
            raise StopIteration
        self.state["seen"].append(0)
        return len(self.state["seen"])

    def get_state(self) -> dict:
        return self.state
