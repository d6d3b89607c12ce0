"""flambe's trainer (PR 168) kept its best weights as ``{k: t.cpu() ...}`` of the state_dict: on a
CPU model ``.cpu()`` returns the very tensor, so the "best" weights are the live parameters. Here a
fit function returns them and the caller saves them after training: the file holds the last epoch's
weights. Never loaded back: judged at the end, where the caller keeps the state_dict's tensors."""

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


best = fit()
torch.save(best, io.BytesIO())
print("best weight is the final weight:", torch.equal(best["weight"], model.weight))
assert torch.equal(best["weight"], model.weight), "the bug did not reproduce"
