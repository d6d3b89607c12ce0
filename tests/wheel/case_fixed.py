"""The twin of case_buggy.py, corrected: both tests must pass under --aliascheck."""

import functools


class Progress:
    def __init__(self):
        self.state = {"epoch": 0, "seen": []}

    def step(self):
        self.state["epoch"] += 1
        self.state["seen"].append(self.state["epoch"])

    def state_dict(self):
        return {"epoch": self.state["epoch"], "seen": list(self.state["seen"])}

    def load_state_dict(self, sd):
        self.state = {"epoch": sd["epoch"], "seen": list(sd["seen"])}


def test_checkpoint():
    p = Progress()
    checkpoints = [p.state_dict()]
    p.step()
    checkpoints.append(p.state_dict())


@functools.cache
def settings():
    return {"retries": [1, 2]}


def test_cached_settings():
    retries = [*settings()["retries"], 3]
    assert settings()["retries"] != retries
