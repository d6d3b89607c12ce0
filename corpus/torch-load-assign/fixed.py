"""load_state_dict(pretrained) copies into the model's own parameters: the checkpoint stays as it was."""

import torch

torch.manual_seed(0)
pretrained = torch.nn.Linear(4, 1).state_dict()  # stands for torch.load("pretrained.pt")
pretrained = {name: tensor.clone() for name, tensor in pretrained.items()}
original = {name: tensor.clone() for name, tensor in pretrained.items()}


def fine_tune(task_seed):
    model = torch.nn.Linear(4, 1)
    model.load_state_dict(pretrained)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(task_seed)
    x, y = torch.randn(16, 4, generator=generator), torch.randn(16, 1, generator=generator)
    for _ in range(3):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model


first = fine_tune(task_seed=1)
intact = all(torch.equal(pretrained[name], original[name]) for name in original)
print(f"the pretrained checkpoint is intact after the first task: {intact}")
assert intact
