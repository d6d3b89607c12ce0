"""The fix: ``v.to("cpu", copy=True)`` (or ``v.detach().clone()``) is a tensor of its own on any device."""

import io

import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
x, y = torch.randn(32, 4), torch.randn(32, 1)
x_val, y_val = x, -y  # a validation set the training data does not help with: an early epoch is best


def validation_loss():
    with torch.no_grad():
        return torch.nn.functional.mse_loss(model(x_val), y_val).item()


def fit(epochs=6, copy=False):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3)
    best_loss, best = float("inf"), None
    for _ in range(epochs):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if (val := validation_loss()) < best_loss:
            best_loss = val
            best = {k: v.to("cpu", copy=True) if copy else v.cpu() for k, v in model.state_dict().items()}
    return best


best = fit(copy=True)
torch.save(best, io.BytesIO())
print("best weight is the final weight:", torch.equal(best["weight"], model.weight))
assert not torch.equal(best["weight"], model.weight)
