"""Consumer-side iterators: torchdata's, with isolation at both ends and a prompt shutdown.

The snapshot a consumer keeps is frozen by the worker (``_feed``); what it hands out from
``get_state()`` is a fresh thaw of it, so a caller who edits the state dict it got cannot corrupt
the stored snapshot (upstream hands out the stored object itself), and two calls never share.
What ``reset(initial_state)`` receives is copied before the source sees it, so a source that
adopts and later mutates it cannot change the caller's checkpoint either.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
import time
from typing import Any

from torchdata.nodes._apply_udf import _apply_udf
from torchdata.nodes.constants import QUEUE_TIMEOUT
from torchdata.nodes.map import ACK_TIMEOUT, _ParallelMapperIter, _SingleThreadedMapper, _sort_worker
from torchdata.nodes.snapshot_store import QueueSnapshotStore

from aliascheck.isolation import isolate

from ._feed import feed_queue
from ._snapshot import thaw


def private_copy(initial_state: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if initial_state is None else isolate(initial_state, on_uncopyable="share")


def wake(semaphore: threading.BoundedSemaphore) -> None:
    """Let a worker blocked on ``semaphore`` see its stop event now rather than on its timeout."""
    try:
        semaphore.release()
    except ValueError:  # already at its bound: the worker is not waiting
        pass


class SingleThreadedMapper(_SingleThreadedMapper):
    """torchdata's ``_SingleThreadedMapper`` (Prefetcher, PinMemory), isolating both ends."""

    def __init__(self, source, prefetch_factor, worker, snapshot_frequency, initial_state) -> None:
        super().__init__(source, prefetch_factor, worker, snapshot_frequency, private_copy(initial_state))

    def get_state(self) -> dict[str, Any]:
        return {"snapshot": thaw(self._snapshot), "steps_since_snapshot": self._steps_since_snapshot}

    def _shutdown(self) -> None:
        if hasattr(self, "_thread") and not getattr(self, "_woken", False):
            self._woken = True
            self._stop_event.set()
            wake(self._sem)
        if hasattr(self, "_stop_event"):  # __init__ may have failed before creating it
            super()._shutdown()


class ParallelMapperIter(_ParallelMapperIter):
    """torchdata's ``_ParallelMapperIter`` with its read thread on ``feed_queue``.

    Upstream's ``__init__`` hard-codes torchdata's ``_populate_queue`` as the read thread, so this
    one builds the same fields (the inherited ``__next__`` and ``_shutdown`` read them) itself.
    """

    def __init__(
        self, source, map_fn, num_workers, in_order, method, mp_context, max_concurrent,
        snapshot_frequency, initial_state,
    ) -> None:
        self.source, self.map_fn, self.num_workers = source, map_fn, num_workers
        self.in_order, self.method, self.mp_context = in_order, method, mp_context
        self.snapshot_frequency = snapshot_frequency
        self._make_queues(max_concurrent)
        fast_forward = self._reset_source(private_copy(initial_state))
        self._start_threads()
        self._snapshot = self._snapshot_store.get_initial_snapshot(thread=self._read_thread, timeout=ACK_TIMEOUT)
        self._skip(fast_forward)

    def _make_queues(self, max_concurrent: int | None) -> None:
        new_queue: Any = queue.Queue if self.method == "thread" else self.mp_context.Queue
        self._in_q, self._intermed_q = new_queue(), new_queue()
        self._sort_q: queue.Queue = queue.Queue()
        self._out_q = self._sort_q if self.in_order else self._intermed_q
        self._max_tasks = 2 * self.num_workers if max_concurrent is None else max_concurrent
        self._sem = threading.BoundedSemaphore(value=self._max_tasks)
        self._stop, self._mp_stop = threading.Event(), self.mp_context.Event()
        self._done = False
        self._steps_since_snapshot = 0
        self._snapshot_store = QueueSnapshotStore()

    def _reset_source(self, initial_state: dict[str, Any] | None) -> int:
        if initial_state is None:
            self._snapshot = None
            self.source.reset()
            return 0
        self._snapshot = initial_state["snapshot"]
        self.source.reset(self._snapshot)
        return initial_state["steps_since_snapshot"]

    def _start_threads(self) -> None:
        self._read_thread = threading.Thread(
            target=feed_queue,
            args=(self.source, self._in_q, self._snapshot_store, self.snapshot_frequency, self._sem, self._stop),
            daemon=True,
        )
        stop = self._stop if self.method == "thread" else self._mp_stop
        spawn = threading.Thread if self.method == "thread" else self.mp_context.Process
        self._workers = [
            spawn(target=_apply_udf, args=(i, self._in_q, self._intermed_q, self.map_fn, stop), daemon=True)
            for i in range(self.num_workers)
        ]
        self._sort_thread = threading.Thread(
            target=_sort_worker, args=(self._intermed_q, self._sort_q, self._stop), daemon=True
        )
        for thread in (self._read_thread, *self._workers):
            thread.start()
        if self.in_order:
            self._sort_thread.start()

    def _skip(self, steps: int) -> None:
        for done in range(steps):
            try:
                next(self)
            except StopIteration:
                raise ValueError(
                    f"Tried to fast-forward {steps} items during init but hit StopIteration after "
                    f"{done} items, this is likely a bug or malformed state_dict"
                ) from None

    def get_state(self) -> dict[str, Any]:
        return {"snapshot": thaw(self._snapshot), "steps_since_snapshot": self._steps_since_snapshot}

    def _shutdown(self) -> None:
        if hasattr(self, "_workers") and not getattr(self, "_woken", False):
            self._woken = True
            self._stop.set()
            self._mp_stop.set()
            wake(self._sem)
            self._wake_workers()
        if hasattr(self, "_stop"):
            super()._shutdown()
        if getattr(self, "method", None) == "process" and not getattr(self, "_closed", False):
            self._closed = True
            self._close_input_queue()

    def _wake_workers(self) -> None:
        # torchdata's _apply_udf polls its input queue with a timeout; feed each blocked worker a
        # wake-up item (indices no real item has) until it exits, within upstream's join budget.
        # One item per worker is not enough: the first worker to wake drains them all.
        wake_index = itertools.count(-1, -1)
        deadline = time.monotonic() + QUEUE_TIMEOUT * 5
        for worker in self._workers:
            while worker.is_alive() and time.monotonic() < deadline:
                self._in_q.put((StopIteration(), next(wake_index)))
                worker.join(timeout=QUEUE_TIMEOUT / 10)

    def _close_input_queue(self) -> None:
        # A multiprocessing queue starts a feeder thread on its first put(), which upstream
        # leaves to the garbage collector. The workers are gone: drain what is still in flight,
        # so that the feeder is not left blocked on a full pipe, then close it and join it.
        with contextlib.suppress(queue.Empty):
            while True:
                self._in_q.get(timeout=QUEUE_TIMEOUT / 10)
        self._in_q.close()
        self._in_q.join_thread()
