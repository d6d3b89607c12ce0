"""CyclicLR.load_state_dict() pops "_scale_fn_custom" from the caller's dict and never puts it back.

A checkpoint kept in memory to restart from is changed by the first load: the restart
(a retry after a lost node, a second run from the same checkpoint) fails with KeyError.
"""

import copy

import torch
from torch.optim.lr_scheduler import CyclicLR


def make():
    weight = torch.nn.Parameter(torch.zeros(2))
    optimizer = torch.optim.SGD([weight], lr=0.1, momentum=0.9)
    return optimizer, CyclicLR(optimizer, base_lr=0.01, max_lr=0.1, step_size_up=4)


optimizer, scheduler = make()
for _ in range(3):
    optimizer.step()
    scheduler.step()
# What torch.save/torch.load would give: a checkpoint that owns its objects.
checkpoint = copy.deepcopy({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()})
taken = sorted(checkpoint["scheduler"])

resumed_opt, resumed = make()
resumed_opt.load_state_dict(checkpoint["optimizer"])
resumed.load_state_dict(checkpoint["scheduler"])
# ... the resumed run is lost early; restart from the same checkpoint
retry_opt, retry = make()
retry_opt.load_state_dict(checkpoint["optimizer"])
try:
    retry.load_state_dict(checkpoint["scheduler"])
    error = None
except KeyError as exc:
    error = exc

missing = sorted(set(taken) - set(checkpoint["scheduler"]))
print(f"keys the checkpoint lost to the first load: {missing}; the retry's load raised {error!r}")
assert missing == ["_scale_fn_custom"] and isinstance(error, KeyError), "the bug did not reproduce"
