"""The same reused read buffer, each chunk bound with torch.as_tensor and collected in a list:
as_tensor of an ndarray shares its memory, so the list holds three tensors over one buffer."""

import numpy as np
import torch

torch.set_num_threads(1)
rng = np.random.default_rng(0)
source = rng.standard_normal((3 * 4, 2)).astype(np.float32)  # stands in for a file read chunk by chunk

buf = np.empty((4, 2), dtype=np.float32)  # one read buffer, reused for every chunk
chunks = []
for start in range(0, len(source), 4):
    buf[:] = source[start:start + 4]
    chunk = torch.as_tensor(buf)  # no copy: the tensor views buf
    chunks.append(chunk)

loaded = torch.cat(chunks).numpy()
print(f"{len(chunks)} chunks, {len(np.unique(loaded, axis=0))} distinct rows")
assert np.array_equal(loaded[:4], source[-4:]), "the bug did not reproduce"
