"""The detached snapshot cloned (``v.detach().clone()``): tensors of their own, which the optimizer's
steps after it leave alone."""

import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
x, y = torch.randn(32, 4), torch.randn(32, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.3)


def step():
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


step()
best = {k: v.detach().clone() for k, v in model.state_dict().items()}
for _ in range(3):
    step()
print("best weight kept:", not torch.equal(best["weight"], model.weight))
assert not torch.equal(best["weight"], model.weight)
