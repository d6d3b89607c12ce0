"""The messages adapter's bookkeeping: which messages are in flight, and when each is looked at.

One :class:`aliascheck.records.Record` per mutable message, kept in this module's tables
(not the ledger's): the value at the send (:func:`aliascheck.judge.message_value`: a
shallow copy for a flat container of atoms, else a fingerprint), the sender's line (a
one-frame :func:`aliascheck.sites.sender` capture) and thread.
:mod:`aliascheck.plugins.messages` wraps the channels and calls in here at the send, at
receipt, when a feeder pickles, at the sender's next receive and at teardown; what
counts as a finding is :mod:`aliascheck.judge`'s to say. Nothing here raises into user code.
"""


from __future__ import annotations

import _queue
import concurrent.futures._base as _cf_base
import concurrent.futures.process as _cf_process
import concurrent.futures.thread as _cf_thread
import io
import itertools
import multiprocessing.connection as _mp_connection
import multiprocessing.queues as _mq
import os
import queue
import threading
import types
import weakref
from typing import Any

import aliascheck.judge as judge
import aliascheck.ledger as _ledger
import aliascheck.mutability as mutability
import aliascheck.records as records
import aliascheck.sites as sites
from aliascheck.records import Record

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
_MAX_PENDING = 200_000  # records kept per process; past that a message is counted, not recorded

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



# id(key) -> message. Received in-process: judged at receipt. Pickled later: judged when fed and at
# teardown. Out-of-band buffers: judged at loads.
_received: dict[int, Record] = {}
_pickled: dict[int, Record] = {}
_buffers: dict[int, Record] = {}
# Pickled messages by the thread that sent them, for that thread's next receive: a list each, so
# a receive looks at its own thread's messages, never at every message pending.
_pending: dict[int, list[Record]] = {}
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


_NOT_PLUMBING = frozenset(mutability.CONTAINERS) | {types.SimpleNamespace}  # the common messages: no lookup


def _skipped(kind: type, obj: Any) -> bool:
    """Whether a message of type *kind* is not recorded: immutable, or a channel or lock itself."""
    if kind in _NOT_PLUMBING:
        return False
    return mutability.immutable(obj) if kind in mutability.FROZEN else _plumbing(kind)


def _recording() -> Any:
    """The ledger recording in this process, or None: one global read when dormant."""
    led = _ledger.current
    return led if led is not None and led.recording and led.pid == _pid else None


def _send(store: dict[int, Record], key: Any, obj: Any, owner: str, label: Any, skip: frozenset[str],
          led: Any, call: bool = False) -> Record | None:
    """Record *obj* as sent now (called by a wrapper, from the sender's call); never raises."""
    try:
        where = sites.sender(skip, 3)  # past this function and the wrapper: the sender's call
        if where is None:
            return None
        flat, fp = judge.message_value(obj)
        name = label if isinstance(label, str) else led.label(label)
        exclude: tuple[str, ...] = ()
        if flat is None and not fp.verifiable:
            if store is _pickled:  # it must be pickled to be sent: say what cannot be
                judge.message_unverifiable(led, owner, name, fp, where, _opaque)
            else:  # an object holding a lock is shared by design: not part of the message's value
                exclude = tuple({judge.holder(path, call) for path, _ in fp.unverifiable()})
                if "" in exclude:
                    return None
        rec = records.handed("call" if call else "message", owner, name, where, threading.current_thread(), obj, fp,
                             records.SYNC if store is _pickled else records.RECEIPT)
        rec.key, rec.flat, rec.ledger = key, flat, led
        if exclude:
            rec.exclude = exclude
        if len(store) >= _MAX_PENDING:
            if id(led) not in _overflow:
                _overflow.add(id(led))
                judge.internal(led, owner, f"more than {_MAX_PENDING} messages pending: later ones are not checked")
            return None
        # A record holds its key, so an id in a store is that object's (setdefault is atomic).
        earlier = store.setdefault(id(key), rec)
        if earlier is not rec:  # the same object sent again before it was received
            if not earlier.flagged:  # it must not have changed since it was first sent
                _checked(led)
                judge.message_changed(earlier, "handover", (flat, fp))
            return None
        if store is _pickled:
            with _lock:
                _pending.setdefault(threading.get_ident(), []).append(rec)
        _count(led, owner)
        return rec
    except Exception as exc:  # aliascheck's own bug must never break the user's send
        judge.internal(led, owner, exc)
        return None


def _count(led: Any, owner: str) -> None:
    counter = _handed.get((id(led), owner))
    if counter is None:
        counter = _handed.setdefault((id(led), owner), itertools.count())
    next(counter)


def _checked(led: Any) -> None:
    checks = _checks.get(id(led))
    next(checks if checks is not None else _checks.setdefault(id(led), itertools.count()))


def _unsend(store: dict[int, Record], rec: Record | None) -> None:
    """The send raised (a full or closed queue): nothing was sent."""
    if rec is not None and store.get(id(rec.key)) is rec:
        store.pop(id(rec.key), None)


def _receive(key: Any) -> None:
    """*key* reached its receiver: judge it once more, then it is the receiver's. Never raises."""
    rec = _received.pop(id(key), None)  # a record holds its key: the id is this object's
    if rec is None:
        return
    if not rec.flagged:
        flat = rec.flat  # the common message: a flat one, unchanged (judge.same_flat, at C speed)
        if flat is not None and judge.same_flat(flat, rec.obj):
            led = rec.ledger
            if led.recording and led.pid == _pid:
                _checked(led)
        else:
            _judge(rec, "receive")
    if rec.kind == "call":  # what the receiver took may change by its hand from now on
        try:
            args, kwargs = rec.obj
            taken = _taken.setdefault(id(rec.ledger), set())
            taken.update(id(x) for x in (*args, *kwargs.values()) if type(x) not in mutability.ATOMS)
        except Exception as exc:  # pragma: no cover - (args, kwargs) is this module's own tuple
            judge.internal(rec.ledger, rec.owner_name, exc)


def _judge(rec: Record, check: str) -> None:
    """Judge a message now, if its ledger is still recording in this process (counted as a check)."""
    led = rec.ledger
    if not led.recording or led.pid != _pid:
        return
    _checked(led)
    judge.message_changed(rec, check, taken=_taken.get(id(led)) if rec.kind == "call" else None)


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
        for rec in mine:
            if _pickled.get(id(rec.key)) is not rec:  # judged at teardown, or the send raised
                continue
            if not (rec.flagged or rec.synced):  # once: a change later is the feeder's or teardown's to see
                rec.synced = True
                _judge(rec, "sync")
            if rec.fed or rec.flagged:
                with _lock:
                    if _pickled.get(id(rec.key)) is rec:
                        del _pickled[id(rec.key)]
            # Not fed yet: the receiver cannot have it. _fed puts it back on this thread's list,
            # so the next receive after the feed hands it over (each message passes here twice at most).
    except Exception as exc:  # pragma: no cover - aliascheck's own bug must not break the receive
        led = _ledger.current
        if led is not None:
            judge.internal(led, MP_QUEUE, exc)


def _fed(rec: Record, data: Any) -> None:
    """The feeder pickled *rec*'s message as *data*: the same bytes as at put (a flat message) is no change."""
    rec.fed = True
    if rec.synced and rec.thread.ident is not None:  # its sender's next receive hands it over
        with _lock:
            _pending.setdefault(rec.thread.ident, []).append(rec)
    if rec.flagged:
        return
    if judge.fed_unchanged(rec, data):
        _checked(rec.ledger)
        return
    _judge(rec, "feed")


def _judge_buffer(rec: Record, buf: Any, check: str) -> None:
    """An out-of-band buffer at ``loads`` or teardown (counted as a check); never raises."""
    led = rec.ledger
    if not led.recording or rec.flagged:
        return
    _checked(led)
    judge.buffer_changed(rec, buf, check)


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
    mine: list[tuple[dict[int, Record], Record]] = []
    with _lock:
        for store in (_received, _pickled, _buffers):
            for key, rec in list(store.items()):
                if rec.ledger is ledger:
                    del store[key]
                    mine.append((store, rec))
    for store, rec in mine:
        if rec.flagged:
            continue
        if store is _buffers:
            buf = rec.key()
            if buf is not None:
                _judge_buffer(rec, buf, "teardown")
        else:
            _judge(rec, "teardown")
    with _lock:
        for ident, msgs in list(_pending.items()):
            left = [m for m in msgs if m.ledger is not ledger]
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
