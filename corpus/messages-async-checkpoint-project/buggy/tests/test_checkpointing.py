import torch
from ckptio import AsyncCheckpointIO, MemoryCheckpointIO


def _step(model, optimizer):
    optimizer.zero_grad()
    model(torch.ones(2, 3)).pow(2).sum().backward()
    optimizer.step()


def test_async_save_writes_a_loadable_checkpoint():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    storage = MemoryCheckpointIO()
    storage.ready.clear()  # the storage is busy when the checkpoint is scheduled
    plugin = AsyncCheckpointIO(storage)
    _step(model, optimizer)
    plugin.save_checkpoint({"state_dict": model.state_dict(), "step": 1}, "step1.ckpt")
    _step(model, optimizer)  # training goes on
    storage.ready.set()
    plugin.teardown()
    loaded = storage.load_checkpoint("step1.ckpt")
    assert loaded["step"] == 1
    assert set(loaded["state_dict"]) == {"weight", "bias"}


def test_sync_save_round_trips():
    model = torch.nn.Linear(3, 1)
    storage = MemoryCheckpointIO()
    storage.save_checkpoint({"state_dict": model.state_dict()}, "last.ckpt")
    loaded = storage.load_checkpoint("last.ckpt")
    assert torch.equal(loaded["state_dict"]["bias"], model.bias.detach())
