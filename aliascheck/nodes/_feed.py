"""Worker loops that feed a consumer queue and store *isolated* snapshots of their source.

These are the isolating twins of torchdata's ``_populate_queue`` and ``_pin_memory_loop``: same
signature, same ``(item, index)`` queue protocol and snapshot versions, so torchdata's consumers
(``_SingleThreadedMapper``, ``_ParallelMapperIter``) drive them unchanged.  They differ in three
places, each an upstream defect:

* both snapshots are frozen at the moment they are taken, in the thread that steps the source.
  Upstream stores ``source.state_dict()`` itself, which for a source that returns its live dict
  keeps changing while the worker runs ahead (meta-pytorch/data PR #1547 proposes a deepcopy of
  the periodic snapshot only; the initial one and ``pin_memory.py`` stay aliased there);
* a falsy snapshot (``{}``) is stored: upstream tests ``if snapshot:``, so for such a source
  ``steps_since_snapshot`` grows forever and a restore replays every item;
* the loop re-checks ``stop_event`` after waking on the semaphore, so that a shutdown that wakes
  it (see ``_iters``) does not step the source one more time.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import torch
import torch.multiprocessing
from torch.utils.data._utils.pin_memory import pin_memory
from torchdata.nodes.base_node import BaseNode
from torchdata.nodes.constants import QUEUE_TIMEOUT
from torchdata.nodes.exception_wrapper import ExceptionWrapper, StartupExceptionWrapper
from torchdata.nodes.snapshot_store import MonotonicIndex, SnapshotStore

from ._snapshot import Freezer


def feed_queue(
    source: BaseNode,
    q: queue.Queue,
    snapshot_store: SnapshotStore,
    snapshot_frequency: int,
    semaphore: threading.BoundedSemaphore,
    stop_event: threading.Event,
    *,
    step: Callable[[BaseNode], Any] = next,
    setup: Callable[[], None] | None = None,
    where: str = "in _populate_queue",
    snapshot: Callable[[Any], Any] | None = None,
) -> None:
    """Put ``(step(source), index)`` on ``q`` while the semaphore allows, with frozen snapshots.

    ``snapshot`` turns ``source.state_dict()`` into what the store keeps (default: a new
    ``Freezer``); a parameter so that the benchmarks run this very loop with ``copy.deepcopy``.
    """
    snapshot = Freezer() if snapshot is None else snapshot
    try:
        if setup is not None:
            setup()
        if not (isinstance(snapshot_frequency, int) and snapshot_frequency >= 0):
            raise ValueError(f"snapshot_frequency must be non-negative integer! Got {snapshot_frequency}")
        snapshot_store.append_initial_snapshot(snapshot=snapshot(source.state_dict()))
    except Exception:
        snapshot_store.append_initial_snapshot(snapshot=StartupExceptionWrapper(where=f"{where} startup"))
        return
    _feed(source, q, snapshot_store, snapshot_frequency, semaphore, stop_event, step, where, snapshot)


def _feed(source, q, store, frequency, semaphore, stop_event, step, where, snapshot) -> None:
    index = MonotonicIndex()
    yielded = 0
    while not stop_event.is_set():
        if not semaphore.acquire(blocking=True, timeout=QUEUE_TIMEOUT):
            continue
        if stop_event.is_set():  # woken by a shutdown, not by a consumed item
            break
        version = index.get()
        try:
            item = step(source)
            yielded += 1
            if frequency > 0 and yielded % frequency == 0:
                # Stored whatever it is: upstream's `if snapshot:` drops a `{}` state.
                store.append(snapshot=snapshot(source.state_dict()), version=version)
        except StopIteration as stop:
            q.put((stop, version), block=False)
            break
        except Exception:
            q.put((ExceptionWrapper(where=where), version), block=False)
            break
        q.put((item, version), block=False)


def pin_memory_loop(
    source: BaseNode,
    q: queue.Queue,
    snapshot_store: SnapshotStore,
    snapshot_frequency: int,
    semaphore: threading.BoundedSemaphore,
    stop_event: threading.Event,
    device_id: int | str,
    device: str | None,
) -> None:
    """``feed_queue`` that pins each item, set up as torchdata's ``_pin_memory_loop`` is."""

    def setup() -> None:
        # Thread-local: keeps the copy in pin_memory from taking every core (as upstream).
        torch.set_num_threads(1)
        torch.multiprocessing._set_thread_name("pt_data_pin")
        _set_device(device_id, device)

    feed_queue(
        source, q, snapshot_store, snapshot_frequency, semaphore, stop_event,
        step=lambda node: pin_memory(next(node), device),
        setup=setup,
        where=f"in _pin_memory_loop for device {device_id}",
    )


def _set_device(device_id: int | str, device: str | None) -> None:
    if device == "cuda":
        torch.cuda.set_device(device_id)
    elif device == "xpu":
        torch.xpu.set_device(device_id)  # type: ignore[attr-defined]
    elif device == torch._C._get_privateuse1_backend_name():
        getattr(torch, device).set_device(device_id)
