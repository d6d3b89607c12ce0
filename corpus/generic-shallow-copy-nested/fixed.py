"""state_dict() returns a deep copy: the checkpoint keeps its nested counts."""

import copy


class ClassBalance:
    """Counts the labels a class-balancing sampler has drawn; resumable through state_dict()."""

    def __init__(self):
        self.state = {"drawn": 0, "per_class": {"cat": 0, "dog": 0}}

    def record(self, label):
        self.state["drawn"] += 1
        self.state["per_class"][label] += 1

    def state_dict(self):
        return copy.deepcopy(self.state)

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
assert consistent and restored.state["per_class"] == {"cat": 1, "dog": 0}
