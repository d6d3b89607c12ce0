"""Stepping owners ahead, as a Prefetcher's worker would, without any sleep.

After a handover at step *i*, taking *k* more items from the *root* forces every
worker thread below it to produce at least *k* more items, so its source has
been stepped at least *k* times past the handover: if the snapshot aliases live
state, it has changed by now, whatever the timing. The harness does this in a
thread of its own with a timeout, and always joins (or reports) that thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import aliascheck.probe as probe

DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class StepResult:
    root: str
    steps: int  # items actually taken
    note: str = ""  # why fewer than asked (exhausted, raised, timed out)


def iterator_of(root: Any) -> Any:
    """What to call next() on to step *root*, or None when stepping would restart it.

    A Loader is stepped through its live iterator: ``iter(loader)`` would reset it.
    A node that was never started is left alone: stepping it would start threads
    the test never asked for.
    """
    if hasattr(root, "_it") and hasattr(root, "load_state_dict") and not hasattr(root, "__next__"):
        return root._it
    if not hasattr(root, "__next__"):
        return None
    if getattr(root, "_BaseNode__initialized", True) is False:
        return None
    return root


def step(it: Any, name: str, steps: int, timeout: float = DEFAULT_TIMEOUT) -> StepResult:
    """Take up to *steps* items from *it* in a background thread, waiting at most *timeout*."""
    taken = [0]
    note = [""]

    def run() -> None:
        try:
            for _ in range(steps):
                next(it)
                taken[0] += 1
        except StopIteration:
            note[0] = "exhausted"
        except BaseException as exc:  # the user's node raised: report, never crash the test
            note[0] = f"stepping raised {type(exc).__name__}: {_text(exc)}"

    thread = threading.Thread(target=run, name=f"aliascheck-step-{name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        return StepResult(name, taken[0], f"timed out after {timeout:g}s (thread left running, daemon)")
    return StepResult(name, taken[0], note[0])


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # an exception whose __str__ raises
        return "<unprintable>"


def select_roots(candidates: Iterable[Any]) -> list[Any]:
    """The candidates that no other candidate contains.

    Stepping an inner node while its parent's worker also steps it would race,
    so only outermost nodes are stepped.
    """
    nodes = list(candidates)
    if len(nodes) < 2:
        return nodes
    inner: set[int] = set()
    for node in nodes:
        inner |= _reachable(node) - {id(node)}
    return [n for n in nodes if id(n) not in inner]


def _reachable(root: Any, depth: int = 6) -> set[int]:
    """Ids of the objects a node graph reaches through attributes and small containers.

    Only objects and containers of up to 32 entries are followed: a node graph is
    a few ``source``/``root``/``_it`` attributes, not the items in its buffers.
    """
    seen: set[int] = set()
    frontier = [root]
    for _ in range(depth):
        following: list[Any] = []
        for obj in frontier:
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            for value in _attributes(obj):
                if isinstance(value, (list, tuple)) and len(value) <= 32:
                    following.extend(value)
                elif isinstance(value, dict) and len(value) <= 32:
                    following.extend(value.values())
                elif probe.is_plain_object(value):
                    following.append(value)
        frontier = following
    return seen


def _attributes(obj: Any) -> list[Any]:
    module = type(obj).__module__ or ""
    if module.startswith(probe.SKIP_MODULES):
        return []
    try:
        return list(vars(obj).values())
    except TypeError:
        return []


def shutdown(root: Any) -> None:
    """Stop and join every worker under *root*, outer nodes first.

    torchdata stops a ``_SingleThreadedMapper``'s (Prefetcher, PinMemory) or a
    ParallelMapper's threads only in ``__del__`` or the next ``reset()``; its
    ``_shutdown()`` sets the stop event and joins. Found by duck typing, so a
    user's node with a ``_shutdown()`` is stopped too.
    """
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if callable(getattr(type(obj), "_shutdown", None)):
            obj._shutdown()
        stack.extend(reversed(_pieces(obj)))


def _pieces(obj: Any) -> list[Any]:
    try:
        values = list(vars(obj).values())
    except TypeError:
        return []
    out = []
    for value in values:
        for child in value.values() if isinstance(value, dict) else value if isinstance(value, list) else [value]:
            if not isinstance(child, type) and (
                hasattr(child, "state_dict") or hasattr(child, "get_state") or hasattr(type(child), "_shutdown")
            ):
                out.append(child)
    return out
