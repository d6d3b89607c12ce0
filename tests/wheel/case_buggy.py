"""Run by .ci/wheel_smoke.sh against the installed wheel: both tests must fail under --aliascheck.

Not collected by the project's own test run (the name is not test_*.py); case_fixed.py is its twin.
"""

import functools


class Progress:  # a state protocol (state_dict/load_state_dict): watched with no configuration
    def __init__(self):
        self.state = {"epoch": 0, "seen": []}

    def step(self):
        self.state["epoch"] += 1
        self.state["seen"].append(self.state["epoch"])

    def state_dict(self):
        return self.state  # the bug: the live dict

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


def test_cached_settings():  # the caches adapter: aliascheck.plugins, mapped from plugins/ in the wheel
    settings()["retries"].append(3)  # the bug: editing the cache's stored value
    assert settings()["retries"]
