"""A result generator refills one block buffer and yields it again: every collected block is the last."""

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
blocks = list(PointSource(signal).result(4))  # "casting the generator to a list" (acoular#159)

print("first samples:", [b[0] for b in blocks])
assert [b[0] for b in blocks] == [8.0, 8.0, 8.0], "the bug did not reproduce"
