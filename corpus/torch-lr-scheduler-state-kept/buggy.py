"""A warmup scheduler's state_dict() holds the live after_scheduler: a kept state moves on (gradual-warmup-lr#27)."""

import copy

import torch
from torch.optim.lr_scheduler import LRScheduler, StepLR


class WarmupScheduler(LRScheduler):
    """Linear warmup for `warmup` epochs, then `after_scheduler` decides (GradualWarmupScheduler's shape)."""

    def __init__(self, optimizer, warmup, after_scheduler):
        self.warmup, self.after_scheduler = warmup, after_scheduler
        super().__init__(optimizer)

    def get_lr(self):
        if self.last_epoch < self.warmup:
            return [base * (self.last_epoch + 1) / self.warmup for base in self.base_lrs]
        return self.after_scheduler.get_last_lr()

    def step(self):
        if self.last_epoch + 1 >= self.warmup:
            self.after_scheduler.step()
        super().step()

    # state_dict() is LRScheduler's: every attribute but the optimizer, the live after_scheduler included


weight = torch.nn.Parameter(torch.zeros(2))
optimizer = torch.optim.SGD([weight], lr=1.0)
scheduler = WarmupScheduler(optimizer, warmup=2, after_scheduler=StepLR(optimizer, step_size=2, gamma=0.1))


def epoch():
    optimizer.step()
    scheduler.step()
    return optimizer.param_groups[0]["lr"]


for _ in range(3):
    epoch()
saved = copy.deepcopy(optimizer.state_dict()), scheduler.state_dict()  # the point to roll back to
expected = [epoch() for _ in range(5)]  # then a loss spike: roll back and take these epochs again

optimizer.load_state_dict(saved[0])
scheduler.load_state_dict(saved[1])
again = [epoch() for _ in range(5)]
print(f"learning rates after the rollback {again}, the first time {expected}")
assert again != expected, "the bug did not reproduce"
