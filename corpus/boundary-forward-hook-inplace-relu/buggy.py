"""A forward hook keeps each Linear output; the next layer, ReLU(inplace=True), rectifies the kept tensors."""

import torch

torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(inplace=True), torch.nn.Linear(16, 2))

acts = []


def keep_output(module, inputs, output):
    acts.append(output)  # the very tensor the next layer rewrites in place


model[0].register_forward_hook(keep_output)
with torch.no_grad():
    for _ in range(4):
        model(torch.randn(5, 8))

negatives = sum(int((a < 0).sum()) for a in acts)
print(f"{len(acts)} kept pre-activations, {negatives} negative values among them")
assert negatives == 0, "the bug did not reproduce"
