"""Early stopping keeps best = [p for p in model.parameters()]: the live Parameters, in a tuple target."""

import torch

torch.set_num_threads(1)
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
        best_loss, best = val, [p for p in model.parameters()]  # the same objects, in a comprehension

with torch.no_grad():  # restore the best weights
    for param, kept in zip(model.parameters(), best, strict=True):
        param.copy_(kept)
restored = validation_loss()
print(f"best validation loss {best_loss:.4f}, after restoring the best weights {restored:.4f}")
assert restored != best_loss, "the bug did not reproduce"
