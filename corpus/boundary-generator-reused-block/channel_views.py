"""The consumer of buggy.py's generator keeps one channel of each multichannel block, taken as a view
(blk[:, 0]): each view is a new array over the one block buffer, so every kept channel is the last
block's (acoular#128's reused buffer, kept through views made by a comprehension)."""

import numpy as np


class PointSource:
    """Stands in for acoular's result generators: (num, channels) blocks, one buffer for all of them."""

    def __init__(self, signal):
        self.signal = signal

    def result(self, num):
        block = np.empty((num, self.signal.shape[1]))  # allocated once, refilled for every block
        for start in range(0, len(self.signal), num):
            block[:] = self.signal[start:start + num]
            yield block


signal = np.arange(24, dtype=float).reshape(12, 2)
first_channel = [blk[:, 0] for blk in PointSource(signal).result(4)]

print("first samples:", [c[0] for c in first_channel])
assert [c[0] for c in first_channel] == [16.0, 16.0, 16.0], "the bug did not reproduce"
