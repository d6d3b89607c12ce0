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
import asyncio.tasks as _tasks
import contextvars
import functools
import gc
import inspect
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

from aliascheck.plugins.message_log import ASYNC_QUEUE, ASYNC_TASK, _recording, _send
from aliascheck.plugins.messages import _get_nowait, _put_nowait

import aliascheck.boundary.runtime as boundary
import aliascheck.judge as judge
from aliascheck.hookspecs import hookimpl
from aliascheck.instrument import patch, undo_all
from aliascheck.kinds import RESUBMITTED
from aliascheck.records import Record

REQUIRES = "asyncio"
_FILES = frozenset({_aq.Queue.put_nowait.__code__.co_filename})  # asyncio's own frames: not the sender
_TASK_FILES = frozenset({_tasks.create_task.__code__.co_filename})  # asyncio.create_task: not the sender


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
        if _recording() is not None and args:
            _task_arguments(task, args[0])
        return task

    return create_task


# A task's coroutine arguments that are dicts or lists, while the task has not started: id(argument) ->
# [(the task, weakly; its record: the arguments' value at create_task)]. One object given to a second
# task, changed since a first one that has not run yet was given it (``msg["to"] = u; create_task(
# send(msg))`` in a loop), reaches that first task changed: judged at the second create_task. Nothing
# of the program's is held: a record keeps the arguments' ids and fingerprint, and the arguments are
# read again from the earlier task's coroutine (which holds them until it starts). Emptied at each
# test's end.
_waiting: dict[int, list[tuple[Any, Record]]] = {}
_WAITING_MOST = 1 << 12


def _arguments(coro: Any) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
    """A coroutine's arguments, not started yet, as the collector sees it (its frame's bound locals, in
    order, after its code object): C-level reads, no code of the program's runs; reading frame.f_locals
    would leave a dict of them on the frame. None when they cannot be told apart so."""
    if not _created(coro):
        return None
    code = coro.cr_code
    count = code.co_argcount + code.co_kwonlyargcount
    refs = gc.get_referents(coro)
    if count == 0 or len(refs) <= count or refs[-count - 1] is not code:
        return None
    kwonly = code.co_kwonlyargcount
    return (tuple(refs[-count:len(refs) - kwonly]),
            dict(zip(code.co_varnames[code.co_argcount:count], refs[len(refs) - kwonly:], strict=True)))


def _task_arguments(task: Any, coro: Any) -> None:
    """Record *coro*'s dict and list arguments as handed to *task*, and judge the earlier tasks, not
    started yet, that were given one of them. Never raises."""
    led = _recording()
    try:
        call = _arguments(coro)
        if call is None:
            return
        given = [x for x in (*call[0], *call[1].values()) if type(x) in (dict, list)]
        if not given:
            return
        me = threading.current_thread()
        for x in given:  # the earlier tasks given the same object, not started yet
            for ref, rec in _waiting.get(id(x), ()):
                earlier = ref()
                if earlier is None or rec.flagged or rec.thread is not me:
                    continue
                then = _arguments(earlier.get_coro())
                if then is not None and id(x) in rec.key:
                    judge.message_changed(rec, RESUBMITTED, now=judge.message_value(then))
        if len(_waiting) >= _WAITING_MOST:
            return
        rec = _send({}, task, call, ASYNC_TASK, coro.cr_code.co_qualname, _TASK_FILES, led, call=True, depth=4)
        if rec is None:
            return
        rec.obj, rec.key = None, frozenset(map(id, given))  # what the task holds, by id only
        ref = weakref.ref(task)
        for x in given:
            _waiting[id(x)] = [(r, one) for r, one in _waiting.get(id(x), ()) if _waits(r)] + [(ref, rec)]
    except Exception:  # aliascheck's own failure never reaches the program
        pass


def _waits(ref: Any) -> bool:
    task = ref()
    return task is not None and _created(task.get_coro())


def _created(coro: Any) -> bool:
    """A coroutine made and not started yet (neither running nor suspended at an await)."""
    return type(coro) is types.CoroutineType and inspect.getcoroutinestate(coro) == inspect.CORO_CREATED


_copy_context = contextvars.copy_context  # the original: the task's items, no copy recorded


@hookimpl
def aliascheck_teardown(ledger: Any) -> None:
    """The test ends: its tasks' records go (a later test's task at a reused id is its own)."""
    _waiting.clear()


@hookimpl
def aliascheck_install(options: Any) -> Callable[[], None]:
    return undo_all([
        patch(_aq.Queue, "put_nowait", functools.partial(_put_nowait, owner=ASYNC_QUEUE, skip=_FILES)),
        patch(_aq.Queue, "get_nowait", _get_nowait),
        patch(_base_events.BaseEventLoop, "create_task", _create_task),
    ])
