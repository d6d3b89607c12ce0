"""``ParallelMapper`` (and ``Mapper``) whose read thread stores isolated snapshots."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

import torchdata.nodes as tn
from torchdata.nodes.base_node import BaseNode
from torchdata.nodes.map import _ParallelMapperImpl

from ._iters import ParallelMapperIter

X = TypeVar("X")
T = TypeVar("T")


class _IsolatedImpl(_ParallelMapperImpl):
    def reset(self, initial_state: dict[str, Any] | None = None) -> None:
        # Upstream drops the old iterator and relies on __del__ to stop its threads; stop them
        # first, so that two read threads never step the source at once.
        if self._it is not None:
            self._it._shutdown()
        super().reset(initial_state)

    def _parallel_reset(self, initial_state: dict[str, Any] | None) -> ParallelMapperIter:
        return ParallelMapperIter(
            source=self.source,
            map_fn=self.map_fn,
            num_workers=self.num_workers,
            in_order=self.in_order,
            method=self.method,
            mp_context=self._mp_context,
            max_concurrent=self.max_concurrent,
            snapshot_frequency=self.snapshot_frequency,
            initial_state=initial_state,
        )


class ParallelMapper(tn.ParallelMapper):
    """Drop-in ``torchdata.nodes.ParallelMapper``: same arguments, items and state dicts.

    With ``num_workers > 0`` its snapshots are copies taken by the read thread when it steps the
    source.  With ``num_workers=0`` (``Mapper``) nothing runs ahead and nothing is kept: the
    source's state passes through, as with upstream's ``Batcher``.
    """

    def __init__(
        self,
        source: BaseNode[X],
        map_fn: Callable[[X], T],
        num_workers: int,
        in_order: bool = True,
        method: Literal["thread", "process"] = "thread",
        multiprocessing_context: str | None = None,
        max_concurrent: int | None = None,
        snapshot_frequency: int = 1,
        prebatch: int | None = None,
    ) -> None:
        # Upstream validates the arguments and builds its (not yet started) implementation;
        # swap in ours, keeping its prebatch wrapping.
        super().__init__(
            source, map_fn, num_workers, in_order, method, multiprocessing_context, max_concurrent,
            snapshot_frequency, prebatch,
        )
        impl = _IsolatedImpl(
            source=self.source,
            map_fn=self.map_fn,
            num_workers=self.num_workers,
            in_order=self.in_order,
            method=self.method,
            multiprocessing_context=self.multiprocessing_context,
            max_concurrent=self.max_concurrent,
            snapshot_frequency=self.snapshot_frequency,
        )
        self._it = impl if prebatch is None else tn.Unbatcher(impl)


def Mapper(source: BaseNode[X], map_fn: Callable[[X], T]) -> ParallelMapper:  # noqa: N802 - upstream's name
    """Drop-in ``torchdata.nodes.Mapper``: a :class:`ParallelMapper` with ``num_workers=0``."""
    return ParallelMapper(source=source, map_fn=map_fn, num_workers=0)
