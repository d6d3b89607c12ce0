"""state_dict() returns self.state.copy(): a new dict, but the nested per-class counts are the live ones."""

import copy


class ClassBalance:
    """Counts the labels a class-balancing sampler has drawn; resumable through state_dict()."""

    def __init__(self):
        self.state = {"drawn": 0, "per_class": {"cat": 0, "dog": 0}}

    def record(self, label):
        self.state["drawn"] += 1
        self.state["per_class"][label] += 1

    def state_dict(self):
        return self.state.copy()  # shallow: "per_class" is still self.state["per_class"]

    def load_state_dict(self, state):
        self.state = copy.deepcopy(state)


balance = ClassBalance()
balance.record("cat")
checkpoint = balance.state_dict()  # after one draw
balance.record("dog")
balance.record("dog")

restored = ClassBalance()
restored.load_state_dict(checkpoint)
print(f"restored: {restored.state}")
consistent = sum(restored.state["per_class"].values()) == restored.state["drawn"]
assert not consistent, "the bug did not reproduce"
