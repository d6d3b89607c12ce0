"""The same half-fix with ``.detach()``: ``{k: v.detach() ...}`` of the state_dict makes new tensor
objects, but over the parameters' own memory, so the "best" weights still move with every optimizer
step. Written at the top level of a script, as a training notebook does: the module's name keeps the
dict of views, and training goes on after it."""

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
best = {k: v.detach() for k, v in model.state_dict().items()}  # new tensors, the parameters' memory
for _ in range(3):
    step()
print("best weight is the final weight:", torch.equal(best["weight"], model.weight))
assert torch.equal(best["weight"], model.weight), "the bug did not reproduce"
