"""get_extra_state() returns a copy of the stats dict: the kept best state_dict keeps the stats it had."""

import torch


class Regressor(torch.nn.Module):
    """A linear model on centred inputs; the running input mean is plain Python numbers, saved as extra state."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 1)
        self.stats = {"count": 0, "mean": 0.0}

    def forward(self, x):
        if self.training:
            n = x.shape[0]
            self.stats["mean"] += (x.mean().item() - self.stats["mean"]) * n / (self.stats["count"] + n)
            self.stats["count"] += n
        return self.linear(x - self.stats["mean"])

    def get_extra_state(self):
        return dict(self.stats)

    def set_extra_state(self, state):
        self.stats = dict(state)


torch.manual_seed(0)
model = Regressor()
optimizer = torch.optim.SGD(model.parameters(), lr=0.3)
x, y = torch.randn(32, 4), torch.randn(32, 1)
x_val, y_val = x, -y  # a validation set the training data does not help with: an early epoch is best


def validation_loss():
    model.eval()
    with torch.no_grad():
        loss = torch.nn.functional.mse_loss(model(x_val), y_val).item()
    model.train()
    return loss


best_loss, best = float("inf"), None
for epoch in range(6):
    loss = torch.nn.functional.mse_loss(model(x + epoch), y)  # the inputs drift: the running mean moves
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if (val := validation_loss()) < best_loss:  # tensors cloned, anything else kept as it is
        best_loss, best = val, {k: v.clone() if torch.is_tensor(v) else v for k, v in model.state_dict().items()}

model.load_state_dict(best)
restored = validation_loss()
print(f"best validation loss {best_loss:.4f}, after restoring the best state {restored:.4f}; stats {model.stats}")
assert restored == best_loss
