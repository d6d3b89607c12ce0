"""asyncio adapter: ``asyncio.Queue`` messages, judged as the ``messages`` adapter judges an in-process queue's.

A separate adapter so that a session whose tests never import asyncio does not pay for
importing it (about 30 ms of start-up): it is installed once asyncio is imported, before
the next test. ``await queue.put(item)`` ends in ``put_nowait``, ``await queue.get()`` in
``get_nowait``: those two are wrapped. The item's value at ``put`` is recorded where the
project's code sends it and compared when it is taken.
"""

from __future__ import annotations

import asyncio.queues as _aq
import functools
from collections.abc import Callable
from typing import Any

from aliascheck.plugins.message_log import ASYNC_QUEUE
from aliascheck.plugins.messages import _get_nowait, _put_nowait

from aliascheck.hookspecs import hookimpl
from aliascheck.instrument import patch, undo_all

REQUIRES = "asyncio"
_FILES = frozenset({_aq.Queue.put_nowait.__code__.co_filename})  # asyncio's own frames: not the sender


@hookimpl
def aliascheck_install(options: Any) -> Callable[[], None]:
    return undo_all([
        patch(_aq.Queue, "put_nowait", functools.partial(_put_nowait, owner=ASYNC_QUEUE, skip=_FILES)),
        patch(_aq.Queue, "get_nowait", _get_nowait),
    ])
