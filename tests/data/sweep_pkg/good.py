"""Nodes whose snapshots and restores are right: the sweep must not flag them."""

from collections.abc import Callable

from torchdata.nodes import BaseNode


class Counter(BaseNode[int]):
    """Yields 0..n-1; its state is a fresh dict."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def reset(self, initial_state: dict | None = None) -> None:
        super().reset(initial_state)
        self.i = 0 if initial_state is None else initial_state["i"]

    def next(self) -> int:
        if self.i >= self.n + 3:
            raise StopIteration
        self.i += 1
        return self.i

    def get_state(self) -> dict:
        return {"i": self.i}


class Scaled(BaseNode[int]):
    """Multiplies its source's items; nests the source's state."""

    def __init__(self, source: BaseNode[int], factor: int, fn: Callable[[int], int] | None = None) -> None:
        super().__init__()
        self.source, self.factor, self.fn = source, factor, fn

    def reset(self, initial_state: dict | None = None) -> None:
        super().reset(initial_state)
        self.source.reset(None if initial_state is None else initial_state["source"])

    def next(self) -> int:
        return next(self.source) * self.factor

    def get_state(self) -> dict:
        return {"source": self.source.state_dict()}


class Window(BaseNode[list]):
    """Yields the last `size` items; keeps them in a list, handed over as a copy."""

    def __init__(self, source: BaseNode[int], size: int = 2) -> None:
        super().__init__()
        self.source, self.size = source, size

    def reset(self, initial_state: dict | None = None) -> None:
        super().reset(initial_state)
        self.source.reset(None if initial_state is None else initial_state["source"])
        self.window = [] if initial_state is None else list(initial_state["window"])

    def next(self) -> list:
        self.window = (self.window + [next(self.source)])[-self.size:]
        return list(self.window)

    def get_state(self) -> dict:
        return {"source": self.source.state_dict(), "window": list(self.window)}
