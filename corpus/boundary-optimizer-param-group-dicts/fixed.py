"""Each optimizer gets param-group dicts of its own: the main phase starts at its configured learning rates."""

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 1))


def param_groups():
    """The project's optimizer configuration, built anew for every optimizer."""
    return [{"params": model[0].parameters()}, {"params": model[1].parameters(), "lr": 0.1}]


warmup = torch.optim.SGD(param_groups(), lr=0.01)
scheduler = torch.optim.lr_scheduler.StepLR(warmup, step_size=1, gamma=0.5)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for _ in range(3):  # warm-up epochs
    warmup.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    warmup.step()
    scheduler.step()

main = torch.optim.SGD(param_groups(), lr=0.05)
lrs = [g["lr"] for g in main.param_groups]
print(f"main optimizer learning rates: {lrs} (expected [0.05, 0.1])")
assert lrs == [0.05, 0.1]
