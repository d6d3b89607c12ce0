"""The hook keeps a copy of the output: the kept pre-activations keep their negative values."""

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(inplace=True), torch.nn.Linear(16, 2))

acts = []


def keep_output(module, inputs, output):
    acts.append(output.detach().clone())


model[0].register_forward_hook(keep_output)
with torch.no_grad():
    for _ in range(4):
        model(torch.randn(5, 8))

negatives = sum(int((a < 0).sum()) for a in acts)
print(f"{len(acts)} kept pre-activations, {negatives} negative values among them")
assert len(acts) == 4 and negatives > 0
