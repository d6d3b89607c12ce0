"""The messages adapter's records: what was sent, by whom, and the judging of it.

One record per mutable message, kept by this module (not the ledger): the value at the
send (a C pickle for a flat container of atoms, else a fingerprint), the sender's line
and thread. :mod:`aliascheck.plugins.messages` wraps the channels and calls in here at
the send, at receipt, when a feeder pickles, at the sender's next receive and at
teardown. Findings go through ``Ledger.report``; nothing here raises into user code.
"""


from __future__ import annotations

import _pickle
import _queue
import concurrent.futures._base as _cf_base
import concurrent.futures.process as _cf_process
import concurrent.futures.thread as _cf_thread
import io
import itertools
import multiprocessing.connection as _mp_connection
import multiprocessing.queues as _mq
import os
import pickle
import queue
import sys
import threading
import weakref
from dataclasses import replace
from typing import Any

import xxhash

import aliascheck.ledger as _ledger
import aliascheck.mutability as mutability
import aliascheck.sites as sites
from aliascheck.diff import Change, diff
from aliascheck.fingerprint import Fingerprint, fingerprint

# The channels, as findings name their owner (aliascheck.kinds.CHANNELS says how to render them).
QUEUE = "queue.Queue"
SIMPLE_QUEUE = "queue.SimpleQueue"
MP_QUEUE = "multiprocessing.Queue"
THREAD_POOL = "concurrent.futures.ThreadPoolExecutor.submit"
PROCESS_POOL = "concurrent.futures.ProcessPoolExecutor.submit"
THREAD = "threading.Thread"
ASYNC_QUEUE = "asyncio.Queue"
PROCESS = "multiprocessing.Process"
POOL = "multiprocessing.pool.Pool"
PICKLE = "pickle.dumps"

# Shared by design: channels, synchronisation, files. Never part of a message's value (a queue handed
# to a thread fills up, an event is set); an argument of these types is left out.
_PLUMBING = (queue.Queue, _queue.SimpleQueue, _mq.Queue, _mq.SimpleQueue, _mp_connection.Connection,
             threading.Event, threading.Condition, threading.Semaphore, threading.Barrier, threading.Thread,
             type(threading.Lock()), type(threading.RLock()), _cf_base.Future, _cf_base.Executor, io.IOBase,
             weakref.ref)
_PROTOCOL = pickle.DEFAULT_PROTOCOL  # multiprocessing's feeder pickles with it
_MAX_PENDING = 200_000  # records kept per process; past that a message is counted, not recorded

# Where code that is not the user's lives; messages sent from there are not recorded.
_LIBRARY = (os.path.dirname(os.__file__) + os.sep, os.path.dirname(os.path.abspath(_ledger.__file__)) + os.sep,
            os.path.dirname(os.path.abspath(__file__)) + os.sep, "<frozen ")
_PACKAGES = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")
# The channel's own frames between a wrapper and the sender (put_nowait calls put; map calls submit).
_QUEUE_FILES = frozenset({queue.Queue.put_nowait.__code__.co_filename})
_MP_FILES = frozenset({_mq.Queue.put_nowait.__code__.co_filename})
_POOL_FILES = frozenset({_cf_base.Executor.map.__code__.co_filename})
_THREAD_POOL_FILES = _POOL_FILES | {_cf_thread.ThreadPoolExecutor.submit.__code__.co_filename}
_PROCESS_POOL_FILES = _POOL_FILES | {_cf_process.ProcessPoolExecutor.submit.__code__.co_filename}
_NO_FILES: frozenset[str] = frozenset()

_pid = os.getpid()


def _forked() -> None:
    """A forked child sends its own messages: the parent's records are not its to judge."""
    global _pid
    _pid = os.getpid()
    for table in (_received, _pickled, _buffers, _handed, _checks, _taken, _pending):
        table.clear()



class _Message:
    """One message as the sender handed it over."""

    __slots__ = ("key", "obj", "fp", "led", "owner", "label", "code", "line", "thread", "call", "flagged", "exclude",
                 "fed", "synced")

    def __init__(self, key: Any, obj: Any, fp: Any, led: Any, owner: str, label: str, code: Any, line: int,
                 thread: threading.Thread, call: bool) -> None:
        self.key = key  # what identifies it at receipt: the item, the thread, the work item, a weakref
        self.obj = obj  # what is compared: the item, or (args, kwargs)
        self.fp = fp  # bytes (a flat container's pickle) or a Fingerprint
        self.led = led
        self.owner = owner
        self.label = label
        self.code = code  # the sender's code object and line
        self.line = line
        self.thread = thread
        self.call = call  # obj is (args, kwargs): paths read args[0]..., kwargs['x']...
        self.flagged = False
        self.exclude: tuple[str, ...] = ()  # paths not judged: parts that hold a lock (shared by design)
        self.fed = False  # a pickled channel's feeder has pickled it: the receiver may have it now
        self.synced = False  # judged at a receive of its sender's already

    @property
    def site(self) -> str:
        return f"{sites._short(self.code.co_filename)}:{self.line}"

    @property
    def stack(self) -> tuple[str, ...]:
        return (f"{self.site} in {getattr(self.code, 'co_qualname', self.code.co_name)}",)


# id(key) -> message. Received in-process: judged at receipt. Pickled later: judged when fed and at
# teardown. Out-of-band buffers: judged at loads.
_received: dict[int, _Message] = {}
_pickled: dict[int, _Message] = {}
_buffers: dict[int, _Message] = {}
# Pickled messages by the thread that sent them, for that thread's next receive: a list each, so
# a receive looks at its own thread's messages, never at every message pending.
_pending: dict[int, list[_Message]] = {}
_lock = threading.Lock()
# What was recorded and checked, per ledger, added to its counters at teardown: the ledger's own
# note_handover()/note_checked() take its lock, too dear per message. next() on a count is atomic.
_handed: dict[tuple[int, str], Any] = {}  # (id(ledger), owner) -> itertools.count
_checks: dict[int, Any] = {}  # id(ledger) -> itertools.count
_opaque: set[tuple[int, str, str]] = set()  # (id(ledger), owner, path) already reported unverifiable
# id(ledger) -> ids of arguments a receiver has taken (a results list every task appends to): a later
# change in them may be a receiver's, not the sender's. Ids only: holding them would change lifetimes.
_taken: dict[int, set[int]] = {}
_overflow: set[int] = set()  # ledgers told that records ran out
os.register_at_fork(after_in_child=_forked)


# -- the per-message path ------------------------------------------------------
# Weakly: a strong cache would keep each argument's class alive, and with it its module's globals
# (a script's loaders, their worker queues and feeder threads).
_plumbing_types: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def _plumbing(kind: type) -> bool:
    found = _plumbing_types.get(kind)
    if found is None:
        try:
            found = issubclass(kind, _PLUMBING)
        except Exception:  # a metaclass whose subclass check raises: not a channel of ours
            found = False
        try:
            _plumbing_types[kind] = found
        except TypeError:  # a type that cannot be weakly referenced: not cached
            pass
    return found


def _skipped(kind: type, obj: Any) -> bool:
    """Whether a message of type *kind* is not recorded: immutable, or a channel or lock itself."""
    return mutability.immutable(obj) if kind in mutability.FROZEN else _plumbing(kind)


def _recording() -> Any:
    """The ledger recording in this process, or None: one global read when dormant."""
    led = _ledger.current
    return led if led is not None and led.recording and led.pid == _pid else None


_verdicts: dict[Any, bool] = {}  # code object -> whether it is the user's


def _users(filename: str) -> bool:
    return not filename.startswith(_LIBRARY) and not any(p in filename for p in _PACKAGES)


def _sender(skip: frozenset[str], depth: int) -> Any:
    """The user's frame that sent the message (past the channel's own frames), or None."""
    frame: Any = sys._getframe(depth + 1)
    while frame is not None and frame.f_code.co_filename in skip:
        frame = frame.f_back
    if frame is None:
        return None
    code = frame.f_code
    users = _verdicts.get(code)
    if users is None:
        users = _verdicts[code] = _users(code.co_filename)
    return frame if users else None


def _snapshot(obj: Any) -> Any:
    """The message's value: a C pickle for a flat container of atoms (no hashing needed to
    compare), a fingerprint for anything else."""
    kind = type(obj)
    if (kind is dict and mutability.ATOMS.issuperset(map(type, obj.values()))) or (
            kind is list and mutability.ATOMS.issuperset(map(type, obj))):
        try:  # a key is hashable: an atom, or an object pickle reduces as it is
            # The protocol multiprocessing's feeder uses: its bytes then compare with these as they are.
            return _pickle.dumps(obj, _PROTOCOL)
        except Exception:
            pass
    return fingerprint(obj)


def _as_fingerprint(fp: Any) -> Fingerprint:
    return Fingerprint(xxhash.xxh3_128_digest(fp), fp) if isinstance(fp, bytes) else fp


def _send(store: dict[int, _Message], key: Any, obj: Any, owner: str, label: Any, skip: frozenset[str],
          led: Any, call: bool = False) -> _Message | None:
    """Record *obj* as sent now (called by a wrapper, from the sender's call); never raises."""
    try:
        frame = _sender(skip, 2)
        if frame is None:
            return None
        fp = _snapshot(obj)
        name = label if isinstance(label, str) else led.label(label)
        exclude: tuple[str, ...] = ()
        if not isinstance(fp, bytes) and not fp.verifiable:
            if store is _pickled:  # it must be pickled to be sent: say what cannot be
                _unverifiable(led, owner, name, fp, frame)
            else:  # an object holding a lock is shared by design: not part of the message's value
                exclude = tuple({_holder(path, call) for path, _ in fp.unverifiable()})
                if "" in exclude:
                    return None
        msg = _Message(key, obj, fp, led, owner, name, frame.f_code, frame.f_lineno, threading.current_thread(), call)
        msg.exclude = exclude
        if len(store) >= _MAX_PENDING:
            if id(led) not in _overflow:
                _overflow.add(id(led))
                _internal(led, owner, f"more than {_MAX_PENDING} messages pending: later ones are not checked")
            return None
        # A record holds its key, so an id in a store is that object's (setdefault is atomic).
        earlier = store.setdefault(id(key), msg)
        if earlier is not msg:  # the same object sent again before it was received
            if not earlier.flagged:  # it must not have changed since it was first sent
                _judge(earlier, "handover", fp)
            return None
        if store is _pickled:
            with _lock:
                _pending.setdefault(threading.get_ident(), []).append(msg)
        _count(led, owner)
        return msg
    except Exception as exc:  # aliascheck's own bug must never break the user's send
        _internal(led, owner, exc)
        return None


def _count(led: Any, owner: str) -> None:
    counter = _handed.get((id(led), owner))
    if counter is None:
        counter = _handed.setdefault((id(led), owner), itertools.count())
    next(counter)


def _unsend(store: dict[int, _Message], msg: _Message | None) -> None:
    """The send raised (a full or closed queue): nothing was sent."""
    if msg is not None and store.get(id(msg.key)) is msg:
        store.pop(id(msg.key), None)


def _receive(key: Any) -> None:
    """*key* reached its receiver: judge it once more, then it is the receiver's. Never raises."""
    msg = _received.pop(id(key), None)  # a record holds its key: the id is this object's
    if msg is None:
        return
    if not msg.flagged:
        _judge(msg, "receive")
    if msg.call:  # what the receiver took may change by its hand from now on
        try:
            args, kwargs = msg.obj
            taken = _taken.setdefault(id(msg.led), set())
            taken.update(id(x) for x in (*args, *kwargs.values()) if type(x) not in mutability.ATOMS)
        except Exception as exc:  # pragma: no cover - (args, kwargs) is this module's own tuple
            _internal(msg.led, msg.owner, exc)


def _judge(msg: _Message, check: str, now: Any = None) -> None:
    """Compare *msg* with its value now (or *now*); report what the sender changed. Never raises."""
    led = msg.led
    try:
        if not led.recording or led.pid != _pid:
            return
        if now is None:
            now = _snapshot(msg.obj)
        checks = _checks.get(id(led))
        next(checks if checks is not None else _checks.setdefault(id(led), itertools.count()))
        if type(now) is type(msg.fp) and (now == msg.fp if isinstance(now, bytes) else now.digest == msg.fp.digest):
            return
        changes = diff(_as_fingerprint(msg.fp), _as_fingerprint(now), collapse=True, reads=True)
        exclude = msg.exclude + _taken_paths(msg) if msg.call else msg.exclude
        if exclude:
            changes = [c for c in changes if not any(_under(c.path, p) for p in exclude)]
        if not changes:  # equal as == compares (a dict's order, a set's), or only in what is not judged
            return
        if msg.call:
            changes = [replace(c, path=_call_path(c.path)) for c in changes]
        msg.flagged = True
        led.report("mutation", changes, owner=msg.owner, label=msg.label, site=msg.site, stack=msg.stack,
                   check=check, thread=msg.thread.name)
    except Exception as exc:
        _internal(led, msg.owner, exc)


def _taken_paths(msg: _Message) -> tuple[str, ...]:
    """The arguments of *msg* a receiver has already taken (through an earlier message)."""
    taken = _taken.get(id(msg.led))
    if not taken:
        return ()
    args, kwargs = msg.obj
    return (*(f"[0][{i}]" for i, x in enumerate(args) if id(x) in taken),
            *(f"[1][{k!r}]" for k, v in kwargs.items() if id(v) in taken))


def _under(path: str, prefix: str) -> bool:
    return path.startswith(prefix) and (len(path) == len(prefix) or path[len(prefix)] in ".[")


def _segments(path: str) -> list[str]:
    """``['a'][0].x`` -> ``["['a']", "[0]", ".x"]`` (keys are reprs: brackets and dots inside quotes)."""
    out, i, n = [], 0, len(path)
    while i < n:
        j = i + 1
        if path[i] == "[":
            quote = ""
            while j < n and (quote or path[j] != "]"):
                if quote and path[j] == "\\":
                    j += 1
                elif path[j] == quote:
                    quote = ""
                elif not quote and path[j] in "'\"":
                    quote = path[j]
                j += 1
            j += 1
        else:
            while j < n and path[j] not in ".[":
                j += 1
        out.append(path[i:j])
        i = j
    return out


def _holder(path: str, call: bool) -> str:
    """The top-level part of a message that holds the unreadable object at *path* ("" for the whole)."""
    parts = _segments(path)
    depth = 2 if call else 1  # a call's top-level parts are args[i] and kwargs[k]
    return "".join(parts[:depth]) if len(parts) > depth else ""


def _call_path(path: str) -> str:
    """``[0][1]['x']`` of ``(args, kwargs)`` as ``args[1]['x']``."""
    if path.startswith("[0]"):
        return "args" + path[3:]
    if path.startswith("[1]"):
        return "kwargs" + path[3:]
    return path


def _unverifiable(led: Any, owner: str, label: str, fp: Fingerprint, frame: Any) -> None:
    fresh = []
    for path, what in fp.unverifiable():
        key = (id(led), owner, path)
        if key not in _opaque:
            _opaque.add(key)
            fresh.append(Change(path, what, "not checked"))
    if fresh:
        code = frame.f_code
        site = f"{sites._short(code.co_filename)}:{frame.f_lineno}"
        led.report("unverifiable", fresh, owner=owner, label=label, check="send", site=site,
                   stack=(f"{site} in {getattr(code, 'co_qualname', code.co_name)}",),
                   hint="this part of the message cannot be pickled or read: send picklable data, "
                        "or register a fingerprint handler (aliascheck.register_handler)")


def _internal(led: Any, owner: str, problem: Any) -> None:
    try:
        text = problem if isinstance(problem, str) else f"{type(problem).__name__}: {problem}"
        led.report("unverifiable", [Change("<message>", text, "not checked")], owner=owner, check="send",
                   hint="an aliascheck limit or bug: the message was not checked")
    except Exception:  # pragma: no cover - nothing may escape into the user's send
        pass




def _synchronized() -> None:
    """This thread received something (a reply, a result): its pickled messages are judged now, and
    those the feeder has pickled become the receiver's.

    A sender may change what it sent once it knows the receiver has it: ``submit(work, cfg).result()``
    then ``cfg["n"] = 2``, or a ``put`` answered on another queue. Receiving anything after the send
    is that knowledge; a change made before it is the race, whatever the feeder's timing.
    Never raises.
    """
    try:
        with _lock:
            mine = _pending.pop(threading.get_ident(), None)
        if not mine:
            return
        for msg in mine:
            if _pickled.get(id(msg.key)) is not msg:  # judged at teardown, or the send raised
                continue
            if not (msg.flagged or msg.synced):  # once: a change later is the feeder's or teardown's to see
                msg.synced = True
                _judge(msg, "sync")
            if msg.fed or msg.flagged:
                with _lock:
                    if _pickled.get(id(msg.key)) is msg:
                        del _pickled[id(msg.key)]
            # Not fed yet: the receiver cannot have it. _fed puts it back on this thread's list,
            # so the next receive after the feed hands it over (each message passes here twice at most).
    except Exception as exc:  # pragma: no cover - aliascheck's own bug must not break the receive
        led = _ledger.current
        if led is not None:
            _internal(led, MP_QUEUE, exc)


def _fed(msg: _Message, data: Any) -> None:
    """The feeder pickled *msg* as *data*: the same bytes as at put (a flat message) is no change."""
    msg.fed = True
    if msg.synced and msg.thread.ident is not None:  # its sender's next receive hands it over
        with _lock:
            _pending.setdefault(msg.thread.ident, []).append(msg)
    if msg.flagged:
        return
    if data is not None and type(msg.fp) is bytes and data == msg.fp:
        checks = _checks.get(id(msg.led))
        next(checks if checks is not None else _checks.setdefault(id(msg.led), itertools.count()))
        return
    _judge(msg, "feed")


def _unpicklable(msg: _Message, exc: Exception) -> None:
    """The feeder could not pickle *msg*: the receiver never gets it (the error goes where the channel
    sends it: printed by the queue's feeder, set on the future)."""
    led = msg.led
    try:
        if not led.recording or msg.flagged:
            return
        msg.flagged = True  # not sent: a later change is no one's concern
        if isinstance(msg.fp, Fingerprint) and not msg.fp.verifiable:
            return  # said at the send already, with the path of what cannot be read
        led.report("unverifiable", [Change("<message>", f"{type(exc).__name__}: {exc}", "not sent")],
                   owner=msg.owner, label=msg.label, site=msg.site, stack=msg.stack, check="feed",
                   thread=msg.thread.name,
                   hint="the message could not be pickled: send picklable data (the channel's own error says why)")
    except Exception:  # pragma: no cover - nothing may escape into the feeder
        pass


def _digest(buf: Any) -> bytes | None:
    """A digest of the bytes *buf* views; None for read-only memory (it cannot change) or a released buffer."""
    try:
        view = buf.raw()
    except (BufferError, ValueError):  # non-contiguous, or released
        try:
            view = memoryview(buf).tobytes()  # type: ignore[assignment]
        except (BufferError, ValueError):
            return None
        return xxhash.xxh3_128_digest(view)
    if view.readonly:
        return None
    return xxhash.xxh3_128_digest(view)


def _judge_buffer(msg: _Message, buf: Any, check: str) -> None:
    led = msg.led
    try:
        if not led.recording or msg.flagged:
            return
        now = _digest(buf)
        checks = _checks.get(id(led))
        next(checks if checks is not None else _checks.setdefault(id(led), itertools.count()))
        if now is None or now == msg.fp:
            return
        msg.flagged = True
        try:
            size = f"the {memoryview(buf).nbytes} bytes"
        except (BufferError, ValueError):
            size = "the bytes"
        led.report("mutation", [Change("<buffer>", f"xxh3 {msg.fp.hex()[:16]}", f"xxh3 {now.hex()[:16]}", "bytes",
                                       f"{size} the out-of-band buffer views changed after dumps")],
                   owner=PICKLE, label=msg.label, site=msg.site, stack=msg.stack, check=check,
                   thread=msg.thread.name)
    except Exception as exc:
        _internal(led, PICKLE, exc)


def _tally(led: Any, handed: list[tuple[str, int]], checks: Any) -> None:
    """Add what this adapter recorded and checked to the ledger's counters (the summary's figures)."""
    with led.lock:
        for owner, n in handed:
            led.stats.handovers += n
            led.stats.owners[owner] += n
        if checks is not None:
            led.stats.checked += next(checks)


def teardown(ledger: Any) -> None:
    """Judge what this test sent and nobody received (and every pickled message), then drop it all."""
    mine: list[tuple[dict[int, _Message], _Message]] = []
    with _lock:
        for store in (_received, _pickled, _buffers):
            for key, msg in list(store.items()):
                if msg.led is ledger:
                    del store[key]
                    mine.append((store, msg))
    for store, msg in mine:
        if msg.flagged:
            continue
        if store is _buffers:
            buf = msg.key()
            if buf is not None:
                _judge_buffer(msg, buf, "teardown")
        else:
            _judge(msg, "teardown")
    with _lock:
        for ident, msgs in list(_pending.items()):
            left = [m for m in msgs if m.led is not ledger]
            if left:
                _pending[ident] = left
            else:
                _pending.pop(ident, None)
        _opaque.difference_update([k for k in _opaque if k[0] == id(ledger)])
        _overflow.discard(id(ledger))
        _taken.pop(id(ledger), None)
        handed = [(key[1], next(_handed.pop(key))) for key in list(_handed) if key[0] == id(ledger)]
        checks = _checks.pop(id(ledger), None)
    try:
        _tally(ledger, handed, checks)
    except Exception:  # pragma: no cover - counters only
        pass
