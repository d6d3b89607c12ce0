"""Per-micro-batch gradients kept as weight.grad: backward() accumulates into that one tensor, so all entries agree."""

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16, 1)

micro_grads = []
optimizer.zero_grad()
for xb, yb in zip(x.chunk(4), y.chunk(4), strict=True):  # gradient accumulation over 4 micro-batches
    loss = torch.nn.functional.mse_loss(model(xb), yb) / 4
    loss.backward()
    micro_grads.append(model.weight.grad)  # the .grad tensor the next backward() adds into
optimizer.step()

norms = [round(g.norm().item(), 6) for g in micro_grads]
print(f"gradient norms after each micro-batch: {norms}")
assert len(set(norms)) == 1, "the bug did not reproduce"
