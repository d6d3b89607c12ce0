"""Each yielded block is a copy (acoular's fix): the collected blocks are the signal's blocks."""

import numpy as np


class PointSource:
    """Stands in for acoular's result generators, as fixed: each block handed out is its own."""

    def __init__(self, signal):
        self.signal = signal

    def result(self, num):
        block = np.empty(num)
        for start in range(0, len(self.signal), num):
            block[:] = self.signal[start:start + num]
            yield block.copy()


signal = np.arange(12, dtype=float)
blocks = list(PointSource(signal).result(4))

print("first samples:", [b[0] for b in blocks])
assert [b[0] for b in blocks] == [0.0, 4.0, 8.0]
