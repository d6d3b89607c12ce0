"""The same generator consumed by ``itertools.pairwise``: the step between consecutive blocks. pairwise
holds the previous block while it asks for the next, and the generator refills that very buffer:
every pair is one block twice, and every step is zero."""

import itertools

import numpy as np


class PointSource:
    """Stands in for acoular's result generators: blocks of samples, one buffer for all of them."""

    def __init__(self, signal):
        self.signal = signal

    def result(self, num):
        block = np.empty(num)  # allocated once, refilled for every block
        for start in range(0, len(self.signal), num):
            block[:] = self.signal[start:start + num]
            yield block


signal = np.arange(12, dtype=float)
steps = [float(b[0] - a[0]) for a, b in itertools.pairwise(PointSource(signal).result(4))]

print("steps between blocks:", steps)
assert steps == [0.0, 0.0], "the bug did not reproduce"
