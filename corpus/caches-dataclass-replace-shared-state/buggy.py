"""The output state is made with dataclasses.replace: its lists and dicts are the input state's."""

import dataclasses


@dataclasses.dataclass
class State:
    leader: bool = False
    relations: list = dataclasses.field(default_factory=list)
    config: dict = dataclasses.field(default_factory=dict)

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def run_event(state_in):
    """The test harness: the handlers write what they did into the output state."""
    out = state_in.replace(leader=True)
    out.relations.append("db")
    out.config["log-level"] = "debug"
    return out


state_in = State(config={"log-level": "info"})
state_out = run_event(state_in)
print("input state after the run:", state_in)
assert state_in.relations == ["db"] and state_in.config["log-level"] == "debug", "the bug did not reproduce"
