"""load_state_dict(sd, assign=True) writes into the caller's sd._metadata (pytorch#188166, its reproducer)."""

import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p = torch.nn.Parameter(torch.ones(1))


sd = M().state_dict()
M().load_state_dict(sd, assign=True)
print("after assign=True:", sd._metadata)

m = M()
old = m.p
m.load_state_dict(sd)  # assign defaults to False
print("a default load kept the parameter object:", m.p is old)
assert m.p is not old, "the bug did not reproduce"
