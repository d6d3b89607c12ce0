"""TensorDataset[i] is a view of the dataset's tensor: an in-place normalisation rewrites the dataset each epoch."""

import torch
from torch.utils.data import TensorDataset

torch.set_num_threads(1)
torch.manual_seed(0)
features = torch.randn(6, 3) * 2 + 5
dataset = TensorDataset(features, torch.arange(6))
mean, std = features.mean(0), features.std(0)


def normalise_(sample):
    sample -= mean  # in place: the sample is dataset.tensors[0][i] itself
    sample /= std
    return sample


epoch_means = []
for _ in range(2):  # epochs
    seen = torch.stack([normalise_(dataset[i][0]) for i in range(len(dataset))])
    epoch_means.append(round(seen.mean().item(), 4))

print(f"mean of the normalised inputs per epoch: {epoch_means}")
assert epoch_means[0] != epoch_means[1], "the bug did not reproduce"
