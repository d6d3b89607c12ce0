"""Correct: the learning rate is changed by writing optimizer.param_groups[0]["lr"].

Why a naive detector would flag it: the dict at param_groups[0] was handed out by the
optimizer and the project changes it after the handover; conversely the optimizer
keeps a dict the project edits. This is the documented way to change a hyperparameter
(LR schedulers do the same): the optimizer is meant to see the new value at its next
step(), and it does. Nothing kept a snapshot that the change falsifies.
"""

import torch


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    weight = torch.nn.Parameter(torch.ones(2))
    optimizer = torch.optim.SGD([weight], lr=0.1)

    weight.grad = torch.ones(2)
    optimizer.step()  # lr 0.1: 1 -> 0.9
    optimizer.param_groups[0]["lr"] = 0.01  # the intended, live change
    optimizer.step()  # lr 0.01: 0.9 -> 0.89
    print(weight.detach().tolist())
    assert torch.allclose(weight.detach(), torch.full((2,), 0.89))


if __name__ == "__main__":
    main()
