"""Stop and join every worker of a pipeline, without waiting for garbage collection."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torchdata.nodes.base_node import BaseNode
from torchdata.nodes.loader import Loader


def shutdown(root: Any) -> None:
    """Stop every worker thread (and process) under ``root`` and join it.

    ``root`` is a ``Loader``, a node, or a torchdata iterator; torchdata's own nodes are stopped
    too.  torchdata stops a node's workers only from ``__del__`` or a later ``reset()``, so a test
    that wants to see no thread left behind (``threading.enumerate()``) calls this.  Outer nodes
    are stopped before the nodes they read from, so no worker waits on a stopped source.
    """
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        stop = getattr(obj, "_shutdown", None)
        if callable(stop):
            stop()
        stack.extend(reversed(list(_children(obj))))


def _children(obj: Any) -> Any:
    for value in vars(obj).values():
        values = value.values() if isinstance(value, Mapping) else [value]
        for child in values:
            if isinstance(child, (BaseNode, Loader)) or callable(getattr(child, "_shutdown", None)):
                yield child
