"""torchdata.nodes adapter: every BaseNode handover, the snapshot store, the Loader.

torchdata 0.11's ``_populate_queue`` (used by Prefetcher and ParallelMapper)
and ``_pin_memory_loop`` store ``source.state_dict()`` in the snapshot store
uncopied, then step the source again (meta-pytorch/data PR #1547 copies only the
periodic snapshot). Wrapping ``BaseNode.state_dict`` records that snapshot in the
worker thread at the moment it is made; ``QueueSnapshotStore.pop_version`` and
``get_initial_snapshot`` are the delivery checks; ``reset`` and
``Loader.load_state_dict`` the re-entry checks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torchdata.nodes import BaseNode, Loader
from torchdata.nodes.snapshot_store import QueueSnapshotStore

from aliascheck.hookspecs import hookimpl
from aliascheck.instrument import checkpoint, instrument, patch, undo_all
from aliascheck.probe import trust

REQUIRES = "torchdata"


@hookimpl
def aliascheck_install(options: Any) -> Callable[[], None]:
    undos = [
        instrument(BaseNode, state=("state_dict",), load=("reset",), iterate=("__iter__",), init=True),
        instrument(Loader, state=("state_dict",), load=("load_state_dict",), iterate=("__iter__",), init=True),
        patch(QueueSnapshotStore, "pop_version", lambda f: checkpoint(f, "delivery")),
        patch(QueueSnapshotStore, "get_initial_snapshot", lambda f: checkpoint(f, "delivery")),
        trust("torchdata"),
    ]
    return undo_all(undos)

