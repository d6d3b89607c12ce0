"""An optimizer keeps and edits the project's param-group dicts: a second one built from them gets its decayed lr."""

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 1))
# the project's optimizer configuration: backbone at the optimizer's lr, head at its own
groups = [{"params": model[0].parameters()}, {"params": model[1].parameters(), "lr": 0.1}]

warmup = torch.optim.SGD(groups, lr=0.01)  # keeps these very dicts as its param_groups and fills them in
scheduler = torch.optim.lr_scheduler.StepLR(warmup, step_size=1, gamma=0.5)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for _ in range(3):  # warm-up epochs
    warmup.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    warmup.step()
    scheduler.step()  # halves 'lr' in the dicts the project still holds

main = torch.optim.SGD(groups, lr=0.05)  # the main phase: backbone 0.05, head 0.1
lrs = [g["lr"] for g in main.param_groups]
print(f"main optimizer learning rates: {lrs} (expected [0.05, 0.1])")
assert lrs != [0.05, 0.1] and main.param_groups[0] is warmup.param_groups[0], "the bug did not reproduce"
