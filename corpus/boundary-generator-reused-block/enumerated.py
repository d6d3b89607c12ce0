"""The reused block collected by the project's own loop, numbered: blocks.append((i, block)) keeps a
new tuple each time, but every tuple holds the one buffer the generator refills."""

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
blocks = []
for i, block in enumerate(PointSource(signal).result(4)):
    blocks.append((i, block))

print("first samples:", [b[0] for _, b in blocks])
assert [b[0] for _, b in blocks] == [8.0, 8.0, 8.0], "the bug did not reproduce"
