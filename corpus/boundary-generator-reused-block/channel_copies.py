"""channel_views.py with each channel copied out of the block before the next block is read."""

import numpy as np


class PointSource:
    def __init__(self, signal):
        self.signal = signal

    def result(self, num):
        block = np.empty((num, self.signal.shape[1]))
        for start in range(0, len(self.signal), num):
            block[:] = self.signal[start:start + num]
            yield block


signal = np.arange(24, dtype=float).reshape(12, 2)
first_channel = [blk[:, 0].copy() for blk in PointSource(signal).result(4)]

print("first samples:", [c[0] for c in first_channel])
assert [c[0] for c in first_channel] == [0.0, 8.0, 16.0]
