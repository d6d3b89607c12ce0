"""Factories for ``aliascheck check``: the seed pipeline buggy and fixed, and the other shapes it accepts.

Imported as a top-level module with ``tests/data`` on ``sys.path`` (as ``seed_source`` is).
"""

import threading

from seed_source import MutableSource
from torchdata.nodes import BaseNode, Batcher, Loader, Prefetcher


def buggy(prefetch_factor=2):
    """The seed bug: the source's get_state() returns its live dict, the Prefetcher keeps it."""
    return Prefetcher(MutableSource(50), prefetch_factor=prefetch_factor)


def fixed(prefetch_factor=2):
    return Prefetcher(MutableSource(50, copy=True), prefetch_factor=prefetch_factor)


def buggy_loader():
    return Loader(Prefetcher(Batcher(MutableSource(40), batch_size=2), prefetch_factor=2))


def fixed_loader():
    return Loader(Prefetcher(Batcher(MutableSource(40, copy=True), batch_size=2), prefetch_factor=2))


def short():
    """Runs out after three items, before most schedules end."""
    return Prefetcher(MutableSource(3, copy=True), prefetch_factor=1)


def bare_source():
    """No Prefetcher: the snapshot aliasing is visible to whoever keeps the state_dict()."""
    return MutableSource(20)


class ForgetfulSource(BaseNode):
    """Its snapshots are copies, but reset() forgets to restore the position."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def reset(self, initial_state=None):
        super().reset(initial_state)
        self.index = 0  # the bug: initial_state["index"] is ignored

    def next(self):
        if self.index >= self.n:
            raise StopIteration
        self.index += 1
        return self.index - 1

    def get_state(self):
        return {"index": self.index}


def forgetful(prefetch_factor=2):
    return Prefetcher(ForgetfulSource(50), prefetch_factor=prefetch_factor)


class Counter:
    """A Stateful iterator with no torchdata at all: __next__, state_dict(), load_state_dict()."""

    def __init__(self, n, live):
        self.n, self.live = n, live
        self._state = {"seen": 0}

    def __iter__(self):
        return self

    def __next__(self):
        if self._state["seen"] >= self.n:
            raise StopIteration
        self._state["seen"] += 1
        return self._state["seen"] * 10

    def state_dict(self):
        return self._state if self.live else dict(self._state)

    def load_state_dict(self, state):
        self._state = dict(state)


def counter():
    return Counter(30, live=True)


def counter_fixed():
    return Counter(30, live=False)


class Broken(BaseNode):
    """A node whose own next() raises at the third item."""

    def reset(self, initial_state=None):
        super().reset(initial_state)
        self.i = 0

    def next(self):
        self.i += 1
        if self.i == 3:
            raise ValueError("item 3 is corrupt")
        return self.i

    def get_state(self):
        return {"i": self.i}


def broken():
    return Broken()


def raises():
    raise RuntimeError("the factory's own bug")


def not_a_node():
    return [1, 2, 3]


def needs_args(path):
    return MutableSource(3)


NOT_CALLABLE = 3
SINGLETON = MutableSource(5, copy=True)


def same():
    return SINGLETON


def short_loader():
    """A Loader that runs out after three items: restoring its end state starts the next epoch."""
    return Loader(MutableSource(3, copy=True))


RELEASE = threading.Event()  # set by the test once the check has given up on Hangs


class Hangs(BaseNode):
    """A node whose next() blocks until RELEASE is set."""

    def reset(self, initial_state=None):
        super().reset(initial_state)

    def next(self):
        RELEASE.wait()
        return 0

    def get_state(self):
        return {}


def hangs():
    return Hangs()
