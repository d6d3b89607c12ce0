"""The queued writer after Lightning #21079's fix: the tensors are cloned before the hand-off, but the
checkpoint's loop state (a list of the epochs' losses, the callbacks' state) is still the trainer's live
object. The trainer appends the next epoch's loss while the writer waits for its disk, so the checkpoint
named for step 1 records step 2's progress (the mixed-step checkpoint of #20953, through plain data)."""

import io
import queue
import threading

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
        self._jobs = queue.Queue()
        self.taken = threading.Event()
        self._writer = threading.Thread(target=self._write, daemon=True)
        self._writer.start()

    def _write(self):
        while (job := self._jobs.get()) is not None:
            self.taken.set()  # the writer holds the checkpoint now
            self.checkpoint_io.save_checkpoint(*job)

    def save_checkpoint(self, checkpoint, path):
        self._jobs.put((checkpoint, path))

    def teardown(self):
        self._jobs.put(None)
        self._writer.join(30)


def train_and_checkpoint():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    disk = BusyDiskIO()
    io_plugin = AsyncCheckpointIO(disk)

    def step():
        optimizer.zero_grad()
        loss = model(torch.ones(2, 3)).pow(2).sum()
        loss.backward()
        optimizer.step()
        return loss.item()

    losses = []
    losses.append(step())
    snapshot = {k: v.detach().clone() for k, v in model.state_dict().items()}  # the #21079 fix
    io_plugin.save_checkpoint({"state_dict": snapshot, "loops": {"losses": losses}, "step": 1}, "step1.ckpt")
    if not io_plugin.taken.wait(30):
        raise TimeoutError("the writer never took the checkpoint")
    losses.append(step())  # training goes on while the writer waits for the disk
    disk.disk_free.set()
    io_plugin.teardown()
    saved = torch.load(io.BytesIO(disk.files["step1.ckpt"]))
    return len(saved["loops"]["losses"]) == 1


if __name__ == "__main__":
    ok = train_and_checkpoint()
    print(f"checkpoint 'step1.ckpt' records step 1's progress only: {ok}")
    assert not ok, "the bug did not reproduce"
