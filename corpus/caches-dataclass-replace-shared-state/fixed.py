"""The output state is made from a deep copy of the input state: the input stays as it was."""

import copy
import dataclasses


@dataclasses.dataclass
class State:
    leader: bool = False
    relations: list = dataclasses.field(default_factory=list)
    config: dict = dataclasses.field(default_factory=dict)

    def replace(self, **changes):
        return dataclasses.replace(copy.deepcopy(self), **changes)


def run_event(state_in):
    """The test harness: the handlers write what they did into the output state."""
    out = state_in.replace(leader=True)
    out.relations.append("db")
    out.config["log-level"] = "debug"
    return out


state_in = State(config={"log-level": "info"})
state_out = run_event(state_in)
print("input state after the run:", state_in)
assert state_in == State(config={"log-level": "info"})
assert state_out.relations == ["db"] and state_out.config == {"log-level": "debug"}
