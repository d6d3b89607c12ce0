"""Drop-in torchdata nodes whose snapshots are isolated from their live source.

torchdata 0.11's ``Prefetcher``, ``PinMemory`` and ``ParallelMapper`` store ``source.state_dict()``
uncopied while their worker keeps stepping the source, so a source that returns live state
(most do, somewhere in their tree) checkpoints a later position than the one delivered, and a
restore skips items (meta-pytorch/data PR #1547 deep-copies the periodic snapshot only).  These
subclasses take the same arguments, yield the same items, and read and write the same state
dicts, interchangeable with upstream's in both directions.  What they do differently:

* both snapshots (initial and periodic) are frozen in the worker when taken (``_snapshot``:
  a pickle with small tensors inline and others cloned aside, 5-15x cheaper than deepcopy);
* a falsy state (``{}``) is stored; upstream's ``if snapshot:`` drops it;
* ``get_state()`` hands out a new copy each call, so editing a returned state cannot corrupt
  the stored snapshot or another caller's copy; ``reset(state)`` copies what it gets before
  the source sees it, so a source that adopts it cannot change the caller's checkpoint;
* shutdown wakes the workers instead of waiting out their poll timeouts, and
  :func:`shutdown` stops and joins every worker of a pipeline (torchdata's nodes too).

A state that cannot be copied at all (a lock) is shared, with an
:class:`~aliascheck.isolation.IsolationWarning`: never worse than upstream, never failing.
"""

from __future__ import annotations

from ._shutdown import shutdown
from .map import Mapper, ParallelMapper
from .prefetch import PinMemory, Prefetcher

__all__ = ["Mapper", "ParallelMapper", "PinMemory", "Prefetcher", "shutdown"]
