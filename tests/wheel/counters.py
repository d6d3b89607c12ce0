"""A module for `aliascheck check counters`: one node class with the bug, one without."""


class Counter:
    """Counts to n; its state_dict() hands out the live position (the bug)."""

    def __init__(self, n: int = 8):
        self.n = n
        self.pos = {"i": 0, "seen": []}

    def __iter__(self):
        return self

    def __next__(self):
        if self.pos["i"] >= self.n:
            raise StopIteration
        self.pos["i"] += 1
        self.pos["seen"].append(self.pos["i"])
        return self.pos["i"]

    def state_dict(self):
        return self.pos

    def load_state_dict(self, sd):
        self.pos = {"i": sd["i"], "seen": list(sd["seen"])}


class CopiedCounter(Counter):
    def state_dict(self):
        return {"i": self.pos["i"], "seen": list(self.pos["seen"])}
