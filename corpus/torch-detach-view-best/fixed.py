"""best = {k: t.detach().to("cpu", copy=True) ...}: a copy on every device, restoring the best restores it."""

import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.3)
x, y = torch.randn(32, 4), torch.randn(32, 1)
x_val, y_val = x, -y  # a validation set the training data does not help with: an early epoch is best


def validation_loss():
    with torch.no_grad():
        return torch.nn.functional.mse_loss(model(x_val), y_val).item()


best_loss, best = float("inf"), None
for _ in range(6):  # epochs
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if (val := validation_loss()) < best_loss:
        best_loss, best = val, {k: t.detach().to("cpu", copy=True) for k, t in model.state_dict().items()}

model.load_state_dict(best)
restored = validation_loss()
print(f"best validation loss {best_loss:.4f}, after restoring the best weights {restored:.4f}")
assert restored == best_loss
