"""Each load is given its own copy of the checkpoint: the load may pop from it, the checkpoint stays whole."""

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
checkpoint = copy.deepcopy({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()})
taken = sorted(checkpoint["scheduler"])

resumed_opt, resumed = make()
resumed_opt.load_state_dict(checkpoint["optimizer"])
resumed.load_state_dict(copy.deepcopy(checkpoint["scheduler"]))  # CyclicLR's load edits what it is given
retry_opt, retry = make()
retry_opt.load_state_dict(checkpoint["optimizer"])
retry.load_state_dict(copy.deepcopy(checkpoint["scheduler"]))

print(f"checkpoint keys after two loads: {sorted(checkpoint['scheduler']) == taken}; retry at epoch {retry.last_epoch}")
assert sorted(checkpoint["scheduler"]) == taken
assert retry.last_epoch == scheduler.last_epoch and retry.get_last_lr() == scheduler.get_last_lr()
