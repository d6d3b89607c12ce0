"""The initial weights are copied when kept: the comparison sees what training changed."""

import numpy as np
import torch

torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 4), torch.randn(32, 1)

w0 = model.weight.detach().clone().numpy()
for _ in range(20):
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()

moved = float(np.abs(model.weight.detach().numpy() - w0).max())
print(f"largest weight change during training: {moved}")
assert moved > 0.0
