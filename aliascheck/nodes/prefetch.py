"""``Prefetcher`` and ``PinMemory`` whose snapshots are isolated from their live source."""

from __future__ import annotations

import functools
from typing import Any

import torchdata.nodes as tn
from torchdata.nodes.base_node import BaseNode

from ._feed import feed_queue, pin_memory_loop
from ._iters import SingleThreadedMapper


class Prefetcher(tn.Prefetcher):
    """Drop-in ``torchdata.nodes.Prefetcher``: same arguments, items and state dicts.

    Its snapshots are copies taken in the worker thread when the source is stepped, so a source
    whose ``get_state()`` returns live state restores to the right item.
    """

    def reset(self, initial_state: dict[str, Any] | None = None) -> None:
        # BaseNode.reset directly: upstream's reset would start its own (aliasing) worker.
        BaseNode.reset(self, initial_state)
        _restart(self, feed_queue, self.prefetch_factor, initial_state)


class PinMemory(tn.PinMemory):
    """Drop-in ``torchdata.nodes.PinMemory``, with isolated snapshots as in :class:`Prefetcher`.

    Like upstream's, the constructor asks the accelerator for its current device.
    """

    def reset(self, initial_state: dict[str, Any] | None = None) -> None:
        BaseNode.reset(self, initial_state)
        worker = functools.partial(pin_memory_loop, device_id=self._current_device, device=self._pin_memory_device)
        _restart(self, worker, 1, initial_state)


def _restart(node: Any, worker: Any, prefetch_factor: int, initial_state: dict[str, Any] | None) -> None:
    if node._it is not None:
        node._it._shutdown()
        node._it = None
    node._it = SingleThreadedMapper(
        source=node.source,
        prefetch_factor=prefetch_factor,
        worker=worker,
        snapshot_frequency=node.snapshot_frequency,
        initial_state=initial_state,
    )
