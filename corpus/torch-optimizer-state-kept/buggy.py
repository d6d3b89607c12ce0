"""A kept optimizer.state_dict() moves on with the optimizer: the rollback restores nothing (pytorch#196083)."""

import torch

torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16, 1)


def train_step():
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


train_step()
saved = optimizer.state_dict()  # the point to roll back to after a loss spike
moments = optimizer.state[model.weight]["exp_avg"].clone()
train_step()
train_step()

optimizer.load_state_dict(saved)  # the rollback
restored = optimizer.state[model.weight]["exp_avg"]
print(f"exp_avg restored to its saved value: {torch.equal(restored, moments)}")
assert not torch.equal(restored, moments), "the bug did not reproduce"
