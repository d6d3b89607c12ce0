"""messages adapter: a message the sender changes after handing it over.

A message handed to another thread or process is not copied at the handover:
``multiprocessing.Queue.put`` pickles later, in a feeder thread; ``queue.Queue``,
``queue.SimpleQueue``, ``ThreadPoolExecutor.submit`` and ``threading.Thread(args=...)``
hand over the object itself; ``ProcessPoolExecutor.submit`` pickles its arguments
when the executor's manager thread gets to them; pickle protocol 5 out-of-band
buffers (``PickleBuffer``) view the producer's memory until ``loads``. A change the
sender makes after the handover reaches the receiver, or not, depending on timing.

The value at the handover is recorded (a fingerprint, in the sender's thread, with
the sender's line) and compared:

- in-process channels, where the receiver gets the same object: at receipt (``get``,
  the thread starting, the work item starting). A difference there is the sender's
  change; after receipt the receiver owns the message and it is no longer watched;
- pickled channels (``multiprocessing.Queue``, ``ProcessPoolExecutor``), where the
  receiver gets a copy made at some unknown moment: when the feeder thread pickles
  it, and at teardown. Any change after ``put`` is the sender's, whether or not the
  feeder had pickled it already, so the verdict does not depend on timing;
- out-of-band buffers: the bytes viewed at ``dumps`` with those viewed at ``loads``;
- at teardown, every message never received.

The per-message path is cheap because most messages are immutable (None, numbers,
strings, bytes, and tuples or frozensets of those): they are skipped by type, with no
record. Messages that library code sends (the standard library, installed packages,
aliascheck itself) are not the user's and are skipped too: an executor's own work
queue, a torchdata worker's queue. Records are this module's own, not the ledger's;
findings go through ``Ledger.report``.

``queue.SimpleQueue`` is a C type whose methods cannot be replaced: while installed,
``queue.SimpleQueue`` names a subclass (``isinstance`` still holds both ways). The
project's modules imported before the install that took it (or ``pickle.dumps``/
``loads``) by name are rebound too; other modules' references are not watched, nor
are buffers handed to ``loads`` as other objects than the ``PickleBuffer`` ``dumps``
gave out.
"""

from __future__ import annotations

import collections
import concurrent.futures._base as _cf_base
import concurrent.futures.process as _cf_process
import concurrent.futures.thread as _cf_thread
import contextvars
import functools
import multiprocessing.connection as _mp_connection
import multiprocessing.pool as _mp_pool
import multiprocessing.process as _mp_process
import multiprocessing.queues as _mq
import os
import pickle
import queue
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

import aliascheck.plugins.message_log as message_log
from aliascheck.plugins.message_log import (
    _MP_FILES,
    _NO_FILES,
    _PROCESS_POOL_FILES,
    _QUEUE_FILES,
    _THREAD_POOL_FILES,
    MP_QUEUE,
    PICKLE,
    POOL,
    PROCESS,
    PROCESS_POOL,
    QUEUE,
    SIMPLE_QUEUE,
    THREAD,
    THREAD_POOL,
    _buffers,
    _count,
    _fed,
    _fed_flat,
    _flat,
    _flat_fed,
    _flat_taken,
    _judge_buffer,
    _lock,
    _pickled,
    _pickled_flat,
    _plumbing,
    _receive,
    _received,
    _received_flat,
    _recording,
    _resubmitted,
    _send,
    _send_flat,
    _serialising,
    _skipped,
    _synchronized,
    _unsend,
)
from aliascheck.plugins.message_log import (
    _flat_send as _fast,
)

import aliascheck.judge as judge
import aliascheck.ledger as _ledger
import aliascheck.mutability as mutability
import aliascheck.records as records
import aliascheck.sites as sites
from aliascheck.discovery import Discovery
from aliascheck.fingerprint import Fingerprint
from aliascheck.hookspecs import hookimpl
from aliascheck.instrument import patch, project_namespaces, rebind, undo_all
from aliascheck.records import Record


# -- queue.Queue, queue.SimpleQueue ----------------------------------------------
def _recorder(kind: type, obj: Any) -> Any:
    """The ledger to record a mutable message *obj* in, or None (dormant, a forked child, a channel or lock)."""
    led = _recording()
    return None if led is None or _skipped(kind, obj) else led


def _put(original: Any, owner: str, skip: frozenset[str], store: dict[int, Record] = _received) -> Any:
    """``put(item, block=True, timeout=None)``: an in-process queue's item is judged when received; a
    ``multiprocessing.Queue``'s (*store* ``_pickled``) until its sender's next receive or teardown."""

    pickled = store is _pickled

    @functools.wraps(original)
    def put(self: Any, item: Any, block: bool = True, timeout: float | None = None) -> Any:
        kind = type(item)
        if kind is dict or kind is list:  # the common mutable message: never a channel or a lock
            led = _ledger.current  # _recording(), inline: this is every message's path
            if led is None or not led.recording or led.pid != message_log._pid:
                return original(self, item, block, timeout)
            try:
                msg = _fast(item, self, owner, skip, led, pickled)
            except Exception:  # aliascheck's own failure (memory): the Python path decides
                msg = NotImplemented
            if msg is NotImplemented:
                msg = _send_flat(item, kind, owner, self, skip, led, pickled)
        elif kind in mutability.ATOMS or (kind is tuple and mutability.ATOMS.issuperset(map(type, item))) \
                or (led := _recorder(kind, item)) is None:
            return original(self, item, block, timeout)
        else:
            msg = _send(store, item, item, owner, self, skip, led)
        try:
            return original(self, item, block, timeout)
        except BaseException:
            _unsend(store, msg)
            raise

    return put


def _get(original: Any) -> Any:
    """``get(block=True, timeout=None)`` of an in-process queue."""

    @functools.wraps(original)
    def get(self: Any, block: bool = True, timeout: float | None = None) -> Any:
        item = original(self, block, timeout)
        if _flat and (entry := _flat_taken(item)) is not None:  # never an atom's id; never raises
            if entry is not True:  # changed since it was sent
                _received_flat(item, entry)
        elif _received and type(item) not in mutability.ATOMS:
            _receive(item, calls=False)
        if _pickled or _pickled_flat:
            _synchronized()
        return item

    return get




def _synchronizing(original: Any) -> Any:
    """A receiving call (``multiprocessing.Queue.get``, ``Future.result``, ``Connection.recv``)."""

    @functools.wraps(original)
    def receive(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        message_log.waited()
        if _pickled or _pickled_flat:
            _synchronized()
        return result

    return receive


_THREADING = threading.__file__


def _waiting(original: Any) -> Any:
    """``Event.wait``/``Condition.wait`` called by the program (not by threading's own ``start()``): this
    thread waited for another (:func:`message_log.waited`)."""

    @functools.wraps(original)
    def wait(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if sys._getframe(1).f_code.co_filename != _THREADING:
            message_log.waited()
        return result

    return wait


def _put_nowait(original: Any, owner: str = SIMPLE_QUEUE, skip: frozenset[str] = _NO_FILES) -> Any:
    """``put_nowait(item)``: a ``SimpleQueue``'s, or an ``asyncio.Queue``'s (its ``await put()`` ends here)."""

    @functools.wraps(original)
    def put_nowait(self: Any, item: Any) -> Any:
        kind = type(item)
        if kind is dict or kind is list:  # the common mutable message: never a channel or a lock
            if (led := _recording()) is None:
                return original(self, item)
            try:
                msg = _fast(item, self, owner, skip, led)
            except Exception:  # aliascheck's own failure (memory): the Python path decides
                msg = NotImplemented
            if msg is NotImplemented:
                msg = _send_flat(item, kind, owner, self, skip, led)
        elif kind in mutability.ATOMS or (led := _recorder(kind, item)) is None:
            return original(self, item)
        else:
            msg = _send(_received, item, item, owner, self, skip, led)
        try:
            return original(self, item)
        except BaseException:
            _unsend(_received, msg)
            raise

    return put_nowait


def _get_nowait(original: Any) -> Any:
    @functools.wraps(original)
    def get_nowait(self: Any) -> Any:
        item = original(self)
        if _flat and (entry := _flat_taken(item)) is not None:  # never an atom's id; never raises
            if entry is not True:  # changed since it was sent
                _received_flat(item, entry)
        elif _received and type(item) not in mutability.ATOMS:
            _receive(item, calls=False)
        return item

    return get_nowait


class _SimpleQueueType(type):
    """Keeps ``isinstance(q, queue.SimpleQueue)`` true for queues made before the install."""

    _aliascheck_base: type

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls._aliascheck_base)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls._aliascheck_base)


def _simple_queue(original: Any) -> type:
    namespace = {"__slots__": (), "__doc__": original.__doc__, "__module__": __name__,
                 "put": _put(original.put, SIMPLE_QUEUE, _NO_FILES),
                 "put_nowait": _put_nowait(original.put_nowait),
                 "get": _get(original.get), "get_nowait": _get_nowait(original.get_nowait)}
    cls = _SimpleQueueType("SimpleQueue", (original,), namespace)
    cls._aliascheck_base = original
    return cls


# -- multiprocessing.Queue -----------------------------------------------------
def _feeding(original: Any) -> Any:
    """The pickler the feeder thread finds by name: it judges a recorded message as it is pickled."""

    class ForkingPickler(original):  # type: ignore[misc, valid-type]
        @classmethod
        def dumps(cls, obj: Any, protocol: Any = None) -> Any:
            if _pickled_flat and (entry := _pickled_flat.get(id(obj))) is not None and entry[0] is obj:
                data = original.dumps(obj, protocol)  # flat: pickling it runs nothing of the program's
                if _flat_fed(entry) is False:  # unchanged: counted in C; changed: judged as a Record
                    _fed_flat(entry, data if protocol is None else None)
                return data
            if not _pickled:
                return original.dumps(obj, protocol)
            key = obj.kwargs if type(obj) is _cf_process._CallItem else obj  # a process pool's call
            msg = _pickled.get(id(key))
            if msg is None or msg.key is not key:
                return original.dumps(obj, protocol)
            try:
                data = original.dumps(obj, protocol)
            except Exception as exc:  # the user's own error: said once more here, raised unchanged
                judge.unpicklable(msg, exc)
                raise
            _fed(msg, data if protocol is None else None)
            return data

    ForkingPickler.__qualname__ = original.__qualname__
    return ForkingPickler






# -- context copies a thread runs a call in ---------------------------------------
# asyncio.to_thread's file, not imported for it: it copies the context for the call it runs in a thread.
_TO_THREAD = os.path.join(os.path.dirname(contextvars.__file__), "asyncio", "threads.py")


def _copying(original: Any) -> Any:
    """``contextvars.copy_context()`` called by the project, or by ``asyncio.to_thread`` for the call it
    runs in a thread: a shallow copy whose mutable values the runtime is told (as a task's). asyncio's
    own callbacks (a ``Handle`` copies the context at every ``call_soon``) are not copies the project
    made: not recorded."""

    @functools.wraps(original)
    def copy_context() -> Any:
        context = original()
        boundary = sys.modules.get("aliascheck.boundary.runtime")
        if boundary is not None and boundary._on:
            try:
                caller = sys._getframe(1).f_code.co_filename
                if caller == _TO_THREAD or boundary._in_project(caller):
                    boundary.context_copied(context, list(context.items()))
            except Exception:  # aliascheck's own failure never reaches the program
                pass
        return context

    return copy_context


# -- executors and threads --------------------------------------------------------
def _call_immutable(args: Any, kwargs: Any) -> bool:
    return mutability.immutable(args) and all(map(mutability.immutable, kwargs.values()))


def _call(args: Any, kwargs: Any) -> tuple[Any, Any]:
    """The value of a call's arguments: a queue, an event or a file given to a worker is left out."""
    if any(_plumbing(type(x)) for x in args):
        args = tuple(f"<{type(x).__name__}>" if _plumbing(type(x)) else x for x in args)
    if any(_plumbing(type(v)) for v in kwargs.values()):
        kwargs = {k: f"<{type(v).__name__}>" if _plumbing(type(v)) else v for k, v in kwargs.items()}
    return args, kwargs


def _work_item(original: Any, store: dict[int, Record], owner: str, skip: frozenset[str],
               by_kwargs: bool) -> Any:
    @functools.wraps(original)
    def __init__(self: Any, future: Any, fn: Any, args: Any, kwargs: Any) -> None:
        original(self, future, fn, args, kwargs)
        if (led := _recording()) is None:
            return
        try:
            call = _call(args, kwargs)
            if _call_immutable(*call):
                return
        except Exception as exc:  # a type whose subclass check raises: never the user's problem
            judge.internal(led, owner, exc)
            return
        # A process pool's call item carries the same kwargs dict (a fresh one per submit).
        _send(store, kwargs if by_kwargs else self, call, owner, _name(fn), skip, led, call=True)
        if _serialising:
            _resubmitted(args, kwargs)

    return __init__


def _run(original: Any) -> Any:
    """A work item's ``run``, or a thread's ``_bootstrap_inner`` (in the new thread, before ``start()``
    returns to the sender: a change before ``start()`` is seen here, and after it the thread owns
    its arguments): the call is received, and runs as the thread's (late serialisation)."""

    @functools.wraps(original)
    def run(self: Any) -> Any:
        # A call run in a context copy (asyncio.to_thread's partial(ctx.run, ...), Thread(target=ctx.run)):
        # this thread reads that copy's values (rule Runtime shallow copies). The stdlib's own attributes.
        boundary = sys.modules.get("aliascheck.boundary.runtime")
        inside = None
        if boundary is not None and boundary._on:
            try:
                own = object.__getattribute__(self, "__dict__")
                inside = boundary.running_context(boundary.context_of(
                    own.get("fn") if type(self) is _cf_thread._WorkItem else own.get("_target")))
            except Exception:  # aliascheck's own failure never reaches the program
                inside = None
        try:
            if not _received:
                return original(self)
            token = message_log.running(_receive(self))
            try:
                return original(self)
            finally:
                message_log.done(token)
        finally:
            if inside is not None and boundary is not None:
                boundary.left_context(inside)

    return run


def _started_with(original: Any, owner: str, skip: frozenset[str], own_kwargs: bool) -> Any:
    """``Thread(target, args=..., kwargs=...)`` (*own_kwargs*: a thread keeps the caller's kwargs dict
    itself, which may change) or ``multiprocessing.Process(...)`` (it keeps a copy of the dict: only
    the values can change). Judged when the thread starts, or at the process's ``start()``."""

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if (led := _recording()) is None:
            return
        try:
            call = _call(tuple(getattr(self, "_args", ())), getattr(self, "_kwargs", None) or {})
            if (not call[1] and mutability.immutable(call[0])) if own_kwargs else _call_immutable(*call):
                return
            name = _name(getattr(self, "_target", None)) or type(self).__name__
        except Exception as exc:
            judge.internal(led, owner, exc)
            return
        rec = _send(_received, self, call, owner, name, skip, led, call=True)
        if rec is not None:
            # An empty container given to the thread or process is filled for it before start() (``jobs =
            # []; Thread(target=work, args=(jobs,)); jobs.extend(...); start()``): prepared, not changed.
            # A value it held at construction, changed before start(), is what the child did not expect.
            args, kwargs = call
            empty = (*(f"[0][{i}]" for i, a in enumerate(args) if type(a) in _FILLED and not a),
                     *(f"[1][{k!r}]" for k, v in kwargs.items() if type(v) in _FILLED and not v))
            if empty:
                rec.exclude = (*rec.exclude, *empty)

    return __init__


_FILLED = (list, dict, set, collections.deque, bytearray)  # exact types: their emptiness is read at C level


def _name(fn: Any) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or ""


# -- multiprocessing.Process and Pool ---------------------------------------------
_PROCESS_FILES = frozenset({_mp_process.BaseProcess.__init__.__code__.co_filename})
_POOL_FILES = frozenset({_mp_pool.Pool.apply_async.__code__.co_filename})


def _pool_call(original: Any, mapping: bool) -> Any:
    """``apply_async(func, args, kwds)``, ``map_async``/``starmap_async``/``imap``/``imap_unordered(func,
    iterable)``: a task handler thread pickles the arguments later. Judged when the sender takes the
    result (``get()``, ``wait()``, ``next()``): by then they were sent, and they are the sender's again."""

    @functools.wraps(original)
    def call(self: Any, func: Any, args: Any = (), *rest: Any, **kwargs: Any) -> Any:
        result = original(self, func, args, *rest, **kwargs)
        if (led := _recording()) is None:
            return result
        value: tuple[tuple[Any, ...], dict[str, Any]]
        try:
            if mapping:
                if not isinstance(args, (list, tuple)):  # a generator is consumed later: not a value to keep
                    return result
                value = (tuple(args), {})
            else:
                kwds = rest[0] if rest else kwargs.get("kwds") or {}
                value = _call(tuple(args), dict(kwds))
            if _call_immutable(*value):
                return result
        except Exception as exc:
            judge.internal(led, POOL, exc)
            return result
        _send(_received, result, value, POOL, _name(func), _POOL_FILES, led, call=True)
        return result

    return call


def _taking(original: Any) -> Any:
    """``Process.start`` (the child takes its copy now; after it the arguments are the parent's again),
    ``AsyncResult.get``/``wait``, ``IMapIterator.next`` (the sender takes a task's result): received."""

    @functools.wraps(original)
    def take(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _received:
            _receive(self)
        return original(self, *args, **kwargs)

    return take


# -- pickle protocol 5 out-of-band buffers ----------------------------------------
def _dumps(original: Any) -> Any:
    @functools.wraps(original)
    def dumps(*args: Any, **kwargs: Any) -> Any:
        if message_log._serialising or message_log._taken_parts:
            message_log.serialised(args[0] if args else kwargs.get("obj"))
        if (current := _ledger.current) is not None:  # a state method's snapshot, written now (*Saved*)
            current.saved(args[0] if args else kwargs.get("obj"))
        callback = kwargs.get("buffer_callback")
        if callback is None or (led := _recording()) is None:
            return original(*args, **kwargs)
        try:
            where = sites.sender(_NO_FILES, 2)
        except ValueError:  # called from the outermost frame: no sender to name
            where = None
        if where is None:
            return original(*args, **kwargs)
        sent: list[Any] = []

        def buffer_callback(buf: Any) -> Any:
            in_band = callback(buf)
            if not in_band:
                sent.append(buf)
            return in_band

        kwargs["buffer_callback"] = buffer_callback
        result = original(*args, **kwargs)
        for buf in sent:
            _send_buffer(led, buf, where)
        return result

    return dumps


def _send_buffer(led: Any, buf: Any, where: sites.Where) -> None:
    try:
        digest = judge.buffer_digest(buf)
        if digest is None:
            return
        key = weakref.ref(buf)  # a strong reference would keep the producer's buffer exported
        rec = records.handed("buffer", PICKLE, "PickleBuffer", where, threading.current_thread(), key,
                             Fingerprint(digest, None), records.LOADS)
        rec.key, rec.ledger = key, led
        with _lock:
            _buffers[id(buf)] = rec
        _count(led, PICKLE)
    except Exception as exc:
        judge.internal(led, PICKLE, exc)




def _loads(original: Any) -> Any:
    @functools.wraps(original)
    def loads(*args: Any, **kwargs: Any) -> Any:
        buffers = kwargs.get("buffers")
        if _buffers and isinstance(buffers, (list, tuple)):
            for buf in buffers:
                _loaded(buf)
        return original(*args, **kwargs)

    return loads


def _loaded(buf: Any) -> None:
    with _lock:
        msg = _buffers.get(id(buf))
        if msg is None or msg.key() is not buf:
            return
        del _buffers[id(buf)]  # the receiver's now
    _judge_buffer(msg, buf, "receive")  # never raises




# -- install and teardown -------------------------------------------------------
@hookimpl
def aliascheck_install(options: Any) -> Callable[[], None]:
    message_log.configure()
    undos = _patch()
    undos += _rebind_imported(Discovery("all" if options.discover == "all" else "project",
                                        options.roots or (os.getcwd(),)).in_scope)
    return undo_all(undos)


def _rebind_imported(in_scope: Callable[[str], bool]) -> list[Callable[[], None]]:
    """The project's modules imported before the install (test modules, a conftest's imports) that took
    ``SimpleQueue`` or pickle's functions by name: rebound to the watched ones while installed."""
    watched = (queue.SimpleQueue, pickle.dumps, pickle.dump, pickle.loads, pickle.load)
    ours = {id(new.__aliascheck_original__): new for new in watched if hasattr(new, "__aliascheck_original__")}
    undos = []
    for module, items in project_namespaces(in_scope):
        for name, value in items:
            new = ours.get(id(value))
            if new is not None and new.__aliascheck_original__ is value:
                undos.append(rebind(module, name, value, new))
    return undos


def _patch() -> list[Callable[[], None]]:
    return [
        patch(queue.Queue, "put", functools.partial(_put, owner=QUEUE, skip=_QUEUE_FILES)),
        patch(queue.Queue, "get", _get),
        patch(queue, "SimpleQueue", _simple_queue),
        patch(_mq.Queue, "put", functools.partial(_put, owner=MP_QUEUE, skip=_MP_FILES, store=_pickled)),
        patch(_mq.JoinableQueue, "put", functools.partial(_put, owner=MP_QUEUE, skip=_MP_FILES, store=_pickled)),
        patch(_mq.Queue, "get", _synchronizing),
        patch(_mp_connection._ConnectionBase, "recv", _synchronizing),
        patch(_cf_base.Future, "result", _synchronizing),
        patch(_mq, "_ForkingPickler", _feeding),
        patch(_cf_thread._WorkItem, "__init__",
              functools.partial(_work_item, store=_received, owner=THREAD_POOL, skip=_THREAD_POOL_FILES,
                                by_kwargs=False)),
        patch(_cf_thread._WorkItem, "run", _run),
        patch(_cf_process._WorkItem, "__init__",
              functools.partial(_work_item, store=_pickled, owner=PROCESS_POOL, skip=_PROCESS_POOL_FILES,
                                by_kwargs=True)),
        patch(threading.Thread, "__init__", functools.partial(_started_with, owner=THREAD, skip=_NO_FILES,
                                                              own_kwargs=True)),
        patch(_mp_process.BaseProcess, "__init__", functools.partial(_started_with, owner=PROCESS,
                                                                     skip=_PROCESS_FILES, own_kwargs=False)),
        patch(_mp_process.BaseProcess, "start", _taking),
        *(patch(_mp_pool.Pool, name, functools.partial(_pool_call, mapping=name != "apply_async"))
          for name in ("apply_async", "map_async", "starmap_async", "imap", "imap_unordered")),
        patch(_mp_pool.ApplyResult, "get", _taking),
        patch(_mp_pool.ApplyResult, "wait", _taking),
        patch(_mp_pool.IMapIterator, "next", _taking),
        patch(_mp_pool.IMapIterator, "__next__", _taking),
        patch(threading.Thread, "_bootstrap_inner", _run),
        patch(threading.Event, "wait", _waiting),
        patch(threading.Condition, "wait", _waiting),
        patch(contextvars, "copy_context", _copying),
        patch(pickle, "dumps", _dumps),
        patch(pickle, "dump", _dumps),
        patch(pickle, "loads", _loads),
        patch(pickle, "load", _loads),
    ]




@hookimpl
def aliascheck_teardown(ledger: Any) -> None:
    """Judge what this test sent and nobody received (and every pickled message), then drop it all."""
    message_log.teardown(ledger)
