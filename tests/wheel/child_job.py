"""The child of case_child.py: plain user code with the aliasing bug of case_buggy.py."""


class Progress:
    def __init__(self):
        self.state = {"epoch": 0, "seen": []}

    def step(self):
        self.state["epoch"] += 1

    def state_dict(self):
        return self.state

    def load_state_dict(self, sd):
        self.state = dict(sd)


p = Progress()
checkpoints = [p.state_dict()]
p.step()
checkpoints.append(p.state_dict())
