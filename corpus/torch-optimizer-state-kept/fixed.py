"""A deep copy of optimizer.state_dict() stays where it was taken: the rollback works."""

import copy

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
saved = copy.deepcopy(optimizer.state_dict())
moments = optimizer.state[model.weight]["exp_avg"].clone()
train_step()
train_step()

optimizer.load_state_dict(saved)  # the rollback
restored = optimizer.state[model.weight]["exp_avg"]
print(f"exp_avg restored to its saved value: {torch.equal(restored, moments)}")
assert torch.equal(restored, moments)
