"""The same loop, each chunk cloned as it is made: torch.as_tensor(buf).clone() owns its memory."""

import numpy as np
import torch

torch.set_num_threads(1)
rng = np.random.default_rng(0)
source = rng.standard_normal((3 * 4, 2)).astype(np.float32)  # stands in for a file read chunk by chunk

buf = np.empty((4, 2), dtype=np.float32)  # one read buffer, reused for every chunk
chunks = []
for start in range(0, len(source), 4):
    buf[:] = source[start:start + 4]
    chunk = torch.as_tensor(buf).clone()  # a copy of this chunk
    chunks.append(chunk)

loaded = torch.cat(chunks).numpy()
print(f"{len(chunks)} chunks")
assert np.array_equal(loaded, source)
