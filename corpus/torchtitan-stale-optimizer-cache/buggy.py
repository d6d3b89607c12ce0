"""A container caches optimizer.state_dict() at init and serves it forever (pytorch/torchtitan#4422)."""

import io

import torch


class OptimizersContainer:
    def __init__(self, model):
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        self._cached = self.optimizer.state_dict()  # taken once, at init: no per-parameter state yet

    def step(self):
        self.optimizer.step()

    def zero_grad(self):
        self.optimizer.zero_grad()

    def state_dict(self):
        return self._cached


torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizers = OptimizersContainer(model)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for _ in range(3):
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizers.zero_grad()
    loss.backward()
    optimizers.step()

buffer = io.BytesIO()
torch.save(optimizers.state_dict(), buffer)  # the checkpoint, written at once
buffer.seek(0)
checkpoint = torch.load(buffer)
print(f"optimizer state in the checkpoint after 3 steps: {checkpoint['state']}")
assert checkpoint["state"] == {}, "the bug did not reproduce"
