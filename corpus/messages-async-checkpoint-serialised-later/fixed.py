"""Lightning's AsyncCheckpointIO after #21079: save_checkpoint() snapshots every tensor on the caller's
thread before submitting, so the next optimizer step cannot reach the checkpoint (pytorch-lightning#20953)."""

import io
import threading
from concurrent.futures import ThreadPoolExecutor

import torch


class BusyDiskIO:
    """The wrapped CheckpointIO: its disk is busy until the trainer lets it write."""

    def __init__(self):
        self.disk_free = threading.Event()
        self.files = {}

    def save_checkpoint(self, checkpoint, path):
        if not self.disk_free.wait(30):
            raise TimeoutError("the disk never became free")
        checkpoint["saved_by"] = "BusyDiskIO"  # the writer's own key: its intent
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer)
        self.files[path] = buffer.getvalue()


class AsyncCheckpointIO:
    def __init__(self, checkpoint_io):
        self.checkpoint_io = checkpoint_io
        self._executor = ThreadPoolExecutor(max_workers=1)

    def save_checkpoint(self, checkpoint, path):
        snapshot = {k: _clone(v) for k, v in checkpoint.items()}
        self._executor.submit(self.checkpoint_io.save_checkpoint, snapshot, path)

    def teardown(self):
        self._executor.shutdown(wait=True)


def _clone(value):
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return type(value)((k, _clone(v)) for k, v in value.items())
    return value


def train_and_checkpoint():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    disk = BusyDiskIO()
    io_plugin = AsyncCheckpointIO(disk)

    def step():
        optimizer.zero_grad()
        model(torch.ones(2, 3)).pow(2).sum().backward()
        optimizer.step()

    step()
    at_step_1 = model.weight.detach().clone()
    io_plugin.save_checkpoint({"state_dict": model.state_dict(), "step": 1}, "step1.ckpt")
    step()  # training goes on while the writer waits for the disk
    disk.disk_free.set()
    io_plugin.teardown()
    saved = torch.load(io.BytesIO(disk.files["step1.ckpt"]))
    return torch.equal(saved["state_dict"]["weight"], at_step_1)


if __name__ == "__main__":
    ok = train_and_checkpoint()
    print(f"checkpoint 'step1.ckpt' holds step 1's weights: {ok}")
    assert ok
