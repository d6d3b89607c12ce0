"""A node the sweep cannot build from its signature: nothing makes a Path."""

from pathlib import Path

from torchdata.nodes import BaseNode


class Lines(BaseNode[str]):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def reset(self, initial_state: dict | None = None) -> None:
        super().reset(initial_state)
        self.lines = self.path.read_text().splitlines()
        self.i = 0 if initial_state is None else initial_state["i"]

    def next(self) -> str:
        if self.i >= len(self.lines):
            raise StopIteration
        self.i += 1
        return self.lines[self.i - 1]

    def get_state(self) -> dict:
        return {"i": self.i}
