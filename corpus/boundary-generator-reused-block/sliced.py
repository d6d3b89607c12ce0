"""The result generator of buggy.py yielding a slice of its one buffer (the last block may be shorter,
so it yields block[:n]): each slice is a new array over the same memory, and every collected block is
still the last (acoular#128's reused buffer, told by memory, not by object)."""

import numpy as np


class PointSource:
    def __init__(self, signal):
        self.signal = signal

    def result(self, num):
        block = np.empty(num)  # allocated once, refilled for every block
        for start in range(0, len(self.signal), num):
            n = len(self.signal[start:start + num])
            block[:n] = self.signal[start:start + num]
            yield block[:n]


signal = np.arange(12, dtype=float)
blocks = list(PointSource(signal).result(4))

print("first samples:", [b[0] for b in blocks])
assert [b[0] for b in blocks] == [8.0, 8.0, 8.0], "the bug did not reproduce"
