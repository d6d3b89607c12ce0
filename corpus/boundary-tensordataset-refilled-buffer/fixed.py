"""Each chunk's TensorDataset gets its own tensor (torch.tensor copies): the dataset holds every chunk."""

import numpy as np
import torch
from torch.utils.data import ConcatDataset, TensorDataset

torch.set_num_threads(1)
rng = np.random.default_rng(0)
source = rng.standard_normal((3 * 4, 2)).astype(np.float32)  # stands in for a file read chunk by chunk

buf = np.empty((4, 2), dtype=np.float32)  # one read buffer, reused for every chunk
chunks = []
for start in range(0, len(source), 4):
    buf[:] = source[start:start + 4]
    chunks.append(TensorDataset(torch.tensor(buf)))  # a copy of this chunk

data = ConcatDataset(chunks)
loaded = torch.stack([data[i][0] for i in range(len(data))]).numpy()
print(f"{len(data)} samples, {len(np.unique(loaded, axis=0))} distinct")
assert np.array_equal(loaded, source)
