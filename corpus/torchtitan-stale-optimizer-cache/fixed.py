"""The cache is dropped on step() and rebuilt on state_dict() (pytorch/torchtitan#4422): checkpoints are current."""

import io

import torch


class OptimizersContainer:
    def __init__(self, model):
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        self._cached = None

    def step(self):
        self.optimizer.step()
        self._cached = None  # invalidated by every step

    def zero_grad(self):
        self.optimizer.zero_grad()

    def state_dict(self):
        if self._cached is None:
            self._cached = self.optimizer.state_dict()
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
torch.save(optimizers.state_dict(), buffer)  # live tensors: written before the next step
buffer.seek(0)
checkpoint = torch.load(buffer)
print(f"steps recorded in the checkpoint: {float(checkpoint['state'][0]['step'])}")
assert float(checkpoint["state"][0]["step"]) == 3.0
