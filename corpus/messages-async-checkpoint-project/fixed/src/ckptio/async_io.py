"""Checkpoint IO as Lightning's: a writer that saves with torch.save, and a wrapper that saves in a
background thread so that training goes on (AsyncCheckpointIO before pytorch-lightning#21079)."""

import io
import threading
from concurrent.futures import ThreadPoolExecutor

import torch


class MemoryCheckpointIO:
    """Saves into memory. ``ready`` is the storage becoming free: a busy disk, a network mount."""

    def __init__(self):
        self.ready = threading.Event()
        self.ready.set()
        self.files = {}

    def save_checkpoint(self, checkpoint, path):
        if not self.ready.wait(30):
            raise TimeoutError("the storage never became free")
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer)
        self.files[path] = buffer.getvalue()

    def load_checkpoint(self, path):
        return torch.load(io.BytesIO(self.files[path]))


def _snapshot(value):
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return type(value)((k, _snapshot(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return type(value)(_snapshot(v) for v in value)
    return value


class AsyncCheckpointIO:
    def __init__(self, checkpoint_io):
        self.checkpoint_io = checkpoint_io
        self._executor = ThreadPoolExecutor(max_workers=1)

    def save_checkpoint(self, checkpoint, path):
        # A point-in-time snapshot on the caller's thread, as pytorch-lightning#21079 does.
        self._executor.submit(self.checkpoint_io.save_checkpoint, _snapshot(checkpoint), path)

    def teardown(self):
        self._executor.shutdown(wait=True)
