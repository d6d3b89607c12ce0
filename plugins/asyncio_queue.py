"""asyncio adapter: ``asyncio.Queue`` messages, judged as the ``messages`` adapter judges an in-process queue's.

Also the task contexts: ``loop.create_task`` copies the current context shallowly, and the
runtime is told the mutable values the copy shares (rule *Runtime shallow copies*, judged in
:mod:`aliascheck.boundary.runtime` when the task reads one). Copies a thread runs a call in
(``contextvars.copy_context``) are the messages adapter's to record.

A separate adapter so that a session whose tests never import asyncio does not pay for
importing it (about 30 ms of start-up): it is installed once asyncio is imported, before
the next test. ``await queue.put(item)`` ends in ``put_nowait``, ``await queue.get()`` in
``get_nowait``: those two are wrapped. The item's value at ``put`` is recorded where the
project's code sends it and compared when it is taken.
"""

from __future__ import annotations

import asyncio.base_events as _base_events
import asyncio.queues as _aq
import contextvars
import functools
from collections.abc import Callable
from typing import Any

from aliascheck.plugins.message_log import ASYNC_QUEUE
from aliascheck.plugins.messages import _get_nowait, _put_nowait

import aliascheck.boundary.runtime as boundary
from aliascheck.hookspecs import hookimpl
from aliascheck.instrument import patch, undo_all

REQUIRES = "asyncio"
_FILES = frozenset({_aq.Queue.put_nowait.__code__.co_filename})  # asyncio's own frames: not the sender


def _create_task(original: Any) -> Any:
    """``loop.create_task(coro, *, name=None, context=None)``: the task runs in a copy of the current
    context (or of *context*), a shallow one; the runtime is told its mutable values
    (:func:`aliascheck.boundary.runtime.context_copied`)."""

    @functools.wraps(original)
    def create_task(self: Any, *args: Any, **kwargs: Any) -> Any:
        task = original(self, *args, **kwargs)
        if boundary._on:
            try:
                context = kwargs.get("context")
                if context is None:  # an empty Context given is the task's, though falsy
                    context = _copy_context()
                boundary.context_copied(task, list(context.items()))
            except Exception:  # aliascheck's own failure never reaches the program
                pass
        return task

    return create_task


_copy_context = contextvars.copy_context  # the original: the task's items, no copy recorded


@hookimpl
def aliascheck_install(options: Any) -> Callable[[], None]:
    return undo_all([
        patch(_aq.Queue, "put_nowait", functools.partial(_put_nowait, owner=ASYNC_QUEUE, skip=_FILES)),
        patch(_aq.Queue, "get_nowait", _get_nowait),
        patch(_base_events.BaseEventLoop, "create_task", _create_task),
    ])
