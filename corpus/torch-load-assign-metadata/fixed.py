"""Without assign=True nothing writes into sd._metadata: a later default load keeps the parameter object.

Until the fix (PR #195990) lands, an assign load writes the flag into whatever state
dict it is given, a copy included; a load with the default assign=False copies the
values into the module's own parameters and leaves the caller's dict alone.
"""

import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p = torch.nn.Parameter(torch.ones(1))


sd = M().state_dict()
M().load_state_dict(sd)
print("after a default load:", sd._metadata)

m = M()
old = m.p
m.load_state_dict(sd)
print("a default load kept the parameter object:", m.p is old)
assert m.p is old
