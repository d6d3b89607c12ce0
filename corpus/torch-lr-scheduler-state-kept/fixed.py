"""The warmup scheduler saves its after_scheduler's state_dict(), as SequentialLR does: the rollback replays."""

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

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "after_scheduler")}
        state["after_scheduler"] = self.after_scheduler.state_dict()
        return copy.deepcopy(state)

    def load_state_dict(self, state_dict):
        state = copy.deepcopy(state_dict)
        self.after_scheduler.load_state_dict(state.pop("after_scheduler"))
        self.__dict__.update(state)


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
assert again == expected
