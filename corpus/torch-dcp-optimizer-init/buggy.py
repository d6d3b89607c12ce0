"""Taking a DCP optimizer state dict before the first step changes the step (pytorch#164929)."""

import torch
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict


def one_step(weights, checkpoint_first):
    model = torch.nn.Linear(5, 5, bias=False)
    model.weight.data.copy_(weights)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    if checkpoint_first:
        get_optimizer_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True))
    model.weight.grad = weights.clone()
    optimizer.step()
    return model.weight.detach().clone()


torch.manual_seed(0)
weights = torch.randn(5, 5)
same = torch.equal(one_step(weights, checkpoint_first=True), one_step(weights, checkpoint_first=False))
print(f"the step is the same with and without the checkpoint: {same}")
assert not same, "the bug did not reproduce"
