from ckptio.async_io import AsyncCheckpointIO, MemoryCheckpointIO

__all__ = ["AsyncCheckpointIO", "MemoryCheckpointIO"]
