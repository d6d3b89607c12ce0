"""The DCP optimizer state dict taken after the step, when the optimizer has state: the step is unchanged."""

import torch
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict


def one_step(weights, checkpoint_after):
    model = torch.nn.Linear(5, 5, bias=False)
    model.weight.data.copy_(weights)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    model.weight.grad = weights.clone()
    optimizer.step()
    if checkpoint_after:
        get_optimizer_state_dict(model, optimizer, options=StateDictOptions(full_state_dict=True))
    return model.weight.detach().clone()


torch.manual_seed(0)
weights = torch.randn(5, 5)
same = torch.equal(one_step(weights, checkpoint_after=True), one_step(weights, checkpoint_after=False))
print(f"the step is the same with and without the checkpoint: {same}")
assert same
