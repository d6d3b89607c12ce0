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
import collections
import concurrent.futures._base as _cf_base
import concurrent.futures.process as _cf_process
import concurrent.futures.thread as _cf_thread
import gc
import io
import itertools
import multiprocessing.connection as _mp_connection
import multiprocessing.queues as _mq
import os
import queue
import sys
import threading
import types
import weakref
from typing import Any, NamedTuple

import aliascheck.gate as gate
import aliascheck.judge as judge
import aliascheck.ledger as _ledger
import aliascheck.mutability as mutability
import aliascheck.probe as probe
import aliascheck.records as records
import aliascheck.sites as sites
from aliascheck.fingerprint import fingerprint
from aliascheck.kinds import EMPTIED, RESUBMITTED, SERIALISED, SERIALISED_LATE, SHARED_RECEIPT
from aliascheck.records import Record

# The channels, as findings name their owner (aliascheck.kinds.CHANNELS says how to render them).
QUEUE = "queue.Queue"
SIMPLE_QUEUE = "queue.SimpleQueue"
MP_QUEUE = "multiprocessing.Queue"
THREAD_POOL = "concurrent.futures.ThreadPoolExecutor.submit"
PROCESS_POOL = "concurrent.futures.ProcessPoolExecutor.submit"
THREAD = "threading.Thread"
ASYNC_QUEUE = "asyncio.Queue"
ASYNC_TASK = "asyncio.create_task"
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
    for table in (_received, _pickled, _buffers, _handed, _checks, _taken, _pending, _flat, _sends,
                  _contexts, _serialising, _pickled_flat, _pending_flat, _fed_ids, _synced_ids, _by_serial):
        table.clear()



# id(key) -> message. Received in-process: judged at receipt. Pickled later: judged when fed and at
# teardown. Out-of-band buffers: judged at loads.
_received: dict[int, Record] = {}
_pickled: dict[int, Record] = {}
_buffers: dict[int, Record] = {}
# Pickled messages by the thread that sent them, for that thread's next receive: a list each, so
# a receive looks at its own thread's messages, never at every message pending.
_pending: dict[int, list[Record]] = {}
# Reentrant: a child's SIGTERM handler runs its teardown check in the thread it interrupted, which
# may be inside a section holding it (processes._on_terminate); a plain lock would wait forever.
_lock = threading.RLock()
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
          led: Any, call: bool = False, depth: int = 3) -> Record | None:
    """Record *obj* as sent now (called by a wrapper, from the sender's call; *depth*: the frames up to
    the sender's, from sites.sender's); never raises."""
    try:
        where = sites.sender(skip, depth)  # past this function and the wrapper: the sender's call
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
        if call:
            rec.sent = _serial[0]
        elif store is _received and (items := _queued(label)) is not None:
            rec.keeper = items
            _taken_another_way(items)
            _on_channel.setdefault(id(items), []).append(rec)
        if exclude:
            rec.exclude = exclude
        if len(store) >= _MAX_PENDING:
            if id(led) not in _overflow:
                _overflow.add(id(led))
                judge.internal(led, owner, f"more than {_MAX_PENDING} messages pending: later ones are not checked")
            return None
        if store is _received and (first := _flat.pop(id(key), None)) is not None:
            store.setdefault(id(key), _flat_record(*first))  # sent flat before: its Record takes its place
        elif store is _pickled and _pickled_flat:
            _as_record(_pickled_flat.get(id(key)))
        # A record holds its key, so an id in a store is that object's (setdefault is atomic).
        earlier = store.setdefault(id(key), rec)
        if earlier is not rec:  # the same object sent again before it was received
            if not earlier.flagged:  # it must not have changed since it was first sent
                _checked(led)
                judge.message_changed(earlier, "handover", (flat, fp))
            if store is _received and not call:  # one more receiver takes this very object
                earlier.receivers += 1
            return None
        if store is _pickled:
            with _lock:
                _pending.setdefault(threading.get_ident(), []).append(rec)
        _count(led, owner)
        return rec
    except Exception as exc:  # aliascheck's own bug must never break the user's send
        judge.internal(led, owner, exc)
        return None


# -- flat messages on in-process channels ---------------------------------------
# Most messages are a dict or list of atoms put on an in-process queue and taken unchanged. Such a
# message in flight is one small tuple in ``_flat`` by its id, not a Record: the message itself (held, so
# that the id stays its own), its flat copy, and its send's context (_Sends: one per send site, thread,
# ledger and channel, shared by every message sent there). A Record is made
# (:func:`_flat_record`) only when a message is judged other than as unchanged at receipt (changed,
# sent again before it was taken, left at teardown), and then judged exactly as before.
_ATOMS = mutability.ATOMS
# An entry holds its send's context by number (_by_serial), not the _Sends itself: a tuple of a dict
# of atoms, its copy and an int is let go by the collector at its first pass, so that many messages in
# flight add nothing to the program's own collections.
_Flat = tuple[Any, Any, int]
_flat: dict[int, _Flat] = {}  # id(message) -> (message, its flat copy, its send's serial)
# A send site (_site_key: its code and instruction, one int) -> the context last made there, as
# (_Sends, thread ident, ledger, id(channel), owner, its ``sent`` count, its serial): what the compiled fast
# path (aliascheck._gate.flat_send) compares before it records a send there by itself.
_sends: dict[int, tuple[Any, ...]] = {}
_contexts: dict[int, list[_Sends]] = {}  # id(ledger) -> its contexts, for their counts at teardown
_by_serial: dict[int, _Sends] = {}  # every context still counted, by its serial
_serials = itertools.count(1)
# Flat messages on a channel that pickles later (multiprocessing.Queue), as _pickled's Records are
# kept: until the sender's next receive after the feeder pickled them, or teardown. The sending
# thread's since its last receive are listed in _pending_flat; those the feeder pickled unchanged
# are in _fed_ids, those a receive looked at (unchanged) in _synced_ids, by the message's id.
_pickled_flat: dict[int, _Flat] = {}
_pending_flat: dict[int, list[_Flat]] = {}
_fed_ids: set[int] = set()
_synced_ids: set[int] = set()


class _Sender(NamedTuple):
    """The sending thread, as a message's record names it (the Thread itself is not held)."""

    name: str
    ident: int


class _Sends:
    """Where flat messages were sent from, by whom, to which channel; how many, and how many arrived
    unchanged (handed over and checked). Counted with ``itertools.count``: atomic across threads."""

    __slots__ = ("where", "ident", "name", "ledger", "owner", "label", "sent", "unsent", "unchanged", "serial")

    def __init__(self, where: Any, led: Any, owner: str, label: str) -> None:
        thread = threading.current_thread()
        self.where, self.ident, self.name = where, threading.get_ident(), thread.name
        self.ledger, self.owner, self.label = led, owner, label
        self.sent, self.unsent, self.unchanged = itertools.count(), itertools.count(), itertools.count()
        self.serial = next(_serials)
        _by_serial[self.serial] = self


# A thread or process made with an object the sender then gives a handle to the child itself
# (``t = Thread(args=(inv,)); inv.thread = t; t.start()``): that handle can only be set once the child
# exists, so it is the sender's preparation, not a change of what was sent. Any other change before
# ``start()`` is judged (the parent preparing the next job with the same dict).
_STARTED = frozenset({THREAD, PROCESS})


def _back_references(rec: Record) -> tuple[str, ...]:
    """Paths (in the call's ``(args, kwargs)``) of an argument's attribute or dict item that is the child
    (``rec.key``, the Thread or Process) itself: read from instance dicts, no code of the program's."""
    child = rec.key
    args, kwargs = rec.obj
    paths: list[str] = []
    given = [(f"[0][{i}]", a) for i, a in enumerate(args)] + [(f"[1][{k!r}]", v) for k, v in kwargs.items()]
    for prefix, arg in given:
        if type(arg) is dict:
            items = arg
        else:
            try:
                items = object.__getattribute__(arg, "__dict__")
            except Exception:
                continue
            if type(items) is not dict:
                continue
            prefix += "."
            paths += [prefix + name for name, value in list(items.items()) if value is child and type(name) is str]
            continue
        paths += [f"{prefix}[{key!r}]" for key, value in list(items.items())
                  if value is child and type(key) in (str, int)]
    return tuple(paths)


# id of an in-process queue's container of items -> its messages recorded at put (not flat), which hold
# that container (``rec.keeper``): its id stays its own while they are listed (:func:`_taken_another_way`).
_on_channel: dict[int, list[Record]] = {}


def _queued(channel: Any) -> Any:
    """The queue's own list or deque of items, or None (read from its instance dict: no code of the program's)."""
    if isinstance(channel, str):
        return None
    try:
        items = object.__getattribute__(channel, "__dict__").get("queue")
    except Exception:
        return None
    return items if isinstance(items, (list, collections.deque)) else None


def _taken_another_way(items: Any) -> None:
    """Before a put on a queue whose container of items is *items*: its messages still recorded as pending
    that it no longer holds were taken off some other way than ``get()`` (an event loop's
    ``heapq.heappop(q.queue)`` under ``q.mutex``): they are received, at a moment not known, so they are
    not judged. Looked at only when more messages are pending than the queue holds (a ``get()`` drops
    its message's record): O(1) otherwise."""
    pending = _on_channel.get(id(items))
    if not pending or len(pending) <= len(items):
        return
    pending[:] = [rec for rec in pending if _received.get(id(rec.key)) is rec]
    if len(pending) <= len(items):
        return
    held = set(map(id, list(items)))
    left = []
    for rec in pending:
        if id(rec.key) in held or rec.receivers > 1 or rec.taken:
            left.append(rec)
        elif _received.get(id(rec.key)) is rec:
            del _received[id(rec.key)]
    pending[:] = left


def _still_queued(rec: Record, held: dict[int, set[int]]) -> bool:
    """Whether the in-process queue *rec*'s message was put on still holds it (``rec.keeper``: the queue's
    own container of items). A queue that no longer holds it was emptied by the program some other way
    than ``get()`` (``heapq.heappop(q.queue)`` under ``q.mutex``): when it was taken is not known, so it is
    not judged at teardown. A queue whose items are not in its own ``queue`` attribute (``SimpleQueue``):
    judged as before. *held*: the ids each container holds, by its id, read once per teardown."""
    items = rec.keeper
    if items is None or rec.receivers > 1 or rec.taken:  # one object on several queues: each receiver's
        return True
    ids = held.get(id(items))
    if ids is None:
        ids = held[id(items)] = set(map(id, list(items)))
    return id(rec.key) in ids


def _site_key(where: sites.Where) -> int:
    """A send site as one int: its code object's address and its instruction (as the compiled gate's
    ``site_key``; the context at the site holds the code, so the address stays its own)."""
    code, lasti = where.frames[0]
    return ((id(code) >> 3) << 20) | (lasti >> 1)


def _send_flat(item: Any, kind: type, owner: str, channel: Any, skip: frozenset[str], led: Any,
               pickled: bool = False) -> Any:
    """Record a dict or list *item* sent on a channel (*pickled*: one that pickles it later); returns
    what :func:`_unsend` takes back if the send raises. Not flat (a value to fingerprint), or sent again
    before it was taken: it goes to :func:`_send`. Never raises.

    The wrapper asks :data:`_flat_send` first (the compiled gate records a flat send at a site whose
    context is in ``_sends`` exactly as this does); what it cannot decide comes here."""
    table, store = (_pickled_flat, _pickled) if pickled else (_flat, _received)
    try:
        if kind is dict:
            if not (_ATOMS.issuperset(map(type, item.values())) and _ATOMS.issuperset(map(type, item))):
                return _send(store, item, item, owner, channel, skip, led, depth=4)
            flat: Any = item.copy()
        elif _ATOMS.issuperset(map(type, item)):
            flat = item[:]
        else:
            return _send(store, item, item, owner, channel, skip, led, depth=4)
        key = id(item)
        if key in table or key in store:  # sent again: judged against its first send
            return _send(store, item, item, owner, channel, skip, led, depth=4)
        where = sites.sender(skip, 3)
        if where is None:
            return None
        site = _site_key(where)
        context = _sends.get(site)
        ident = threading.get_ident()
        if context is None or context[1] != ident or context[2] is not led or context[3] != id(channel) \
                or context[4] is not owner:
            sends = _Sends(where, led, owner, led.label(channel))
            context = _sends[site] = (sends, ident, led, id(channel), owner, sends.sent, sends.serial)
            _contexts.setdefault(id(led), []).append(sends)
        entry = table[key] = (item, flat, context[6])
        if pickled:
            _pending_flat.setdefault(ident, []).append(entry)
        next(context[5])
        return entry
    except Exception as exc:  # aliascheck's own bug must never break the user's send
        judge.internal(led, owner, exc)
        return None


def _ledger_of(entry: _Flat) -> Any:
    """The ledger a flat entry was sent under; None once its context's test ended."""
    sends = _by_serial.get(entry[2])
    return sends.ledger if sends is not None else None


def _flat_record(item: Any, flat: Any, serial: int, checked: str = records.RECEIPT) -> Record:
    sends = _by_serial[serial]
    rec = records.handed("message", sends.owner, sends.label, sends.where, _Sender(sends.name, sends.ident), item,
                         judge.FLAT, checked)
    rec.key, rec.flat, rec.ledger = item, flat, sends.ledger
    return rec


def _as_record(entry: _Flat | None, synced: bool = False) -> Record | None:
    """A flat message of a pickled channel becomes a Record in ``_pickled`` (what it was fed and synced
    as carried over), to be judged as any: changed, or sent again. None: *entry* is no longer recorded.
    *synced*: the caller judges it as its sender's receive (else that receive will)."""
    if entry is None:
        return None
    item, flat, serial = entry
    key = id(item)
    with _lock:
        if _pickled_flat.get(key) is not entry:
            return None
        del _pickled_flat[key]
        fed, synced_before = key in _fed_ids, key in _synced_ids
        _fed_ids.discard(key)
        _synced_ids.discard(key)
        rec = _flat_record(item, flat, serial, records.SYNC)
        rec.fed, rec.synced = fed, synced_before or synced
        _pickled.setdefault(key, rec)
        if not rec.synced:
            _pending.setdefault(rec.thread.ident, []).append(rec)
    return rec


def _flat_fed_here(entry: _Flat) -> bool | None:
    """The feeder pickled a flat message: True when unchanged since the send (the very keys and values,
    looked at under the GIL after the pickle: fed and counted; the receiver's now, dropped, if a
    receive of its sender's looked at it already), False when changed, None when no longer recorded.
    The reference of the compiled gate's ``flat_fed``."""
    item, flat, serial = entry
    sends = _by_serial.get(serial)
    key = id(item)
    with _lock:
        if sends is None or _pickled_flat.get(key) is not entry:  # its test ended, or it was judged
            return None
        if not _same(flat, item):
            return False
        if key in _synced_ids:  # synced, then pickled as sent: the receiver has it, nothing is left to judge
            del _pickled_flat[key]
            _synced_ids.discard(key)
        else:
            _fed_ids.add(key)
    next(sends.unchanged)
    return True


def _flat_synced_here(mine: list[_Flat]) -> list[_Flat]:
    """The sending thread received something: each of its flat pickled messages still recorded is looked
    at once (unchanged: counted), and one the feeder pickled is the receiver's now (dropped). Returns the
    changed ones, still recorded. The reference of the compiled gate's ``flat_synced``."""
    changed = []
    for entry in mine:
        item, flat, serial = entry
        key = id(item)
        sends = _by_serial.get(serial)
        if sends is None or _pickled_flat.get(key) is not entry:  # judged, or taken back
            continue
        if key not in _synced_ids:
            if not _same(flat, item):
                changed.append(entry)
                continue
            next(sends.unchanged)
            _synced_ids.add(key)
        if key in _fed_ids:
            with _lock:
                if _pickled_flat.get(key) is entry:
                    del _pickled_flat[key]
                    _fed_ids.discard(key)
                    _synced_ids.discard(key)
    return changed


def _fed_flat(entry: _Flat, data: Any) -> None:
    """The feeder pickled a flat message as *data*, and :data:`_flat_fed` (asked by the feeder's
    pickler, unchanged counted there) found it changed: judged as a Record by :func:`_fed`. Never raises."""
    try:
        rec = _as_record(entry)
        if rec is not None:
            _fed(rec, data)
    except Exception as exc:  # pragma: no cover - aliascheck's own bug must not break the feeder
        led = _ledger.current
        if led is not None:
            judge.internal(led, MP_QUEUE, exc)


def _synchronized_flat(mine: list[_Flat]) -> None:
    """This thread received something: its flat pickled messages are looked at (see
    :func:`_synchronized`); a changed one is judged as a Record."""
    for entry in _flat_synced(mine):
        rec = _as_record(entry, synced=True)
        if rec is not None:
            _judge(rec, "sync")
            if rec.fed or rec.flagged:
                with _lock:
                    if _pickled.get(id(entry[0])) is rec:
                        del _pickled[id(entry[0])]


def _flat_taken_here(item: Any) -> Any:
    """*item* was taken off an in-process channel: None when it was not sent flat; True when it was and
    is unchanged (counted); else its entry, popped, to judge (:func:`_received_flat`). The reference
    of the compiled gate's ``flat_taken``."""
    entry = _flat.pop(id(item), None)  # never an atom's id
    if entry is None:
        return None
    flat, sends = entry[1], _by_serial.get(entry[2])
    if sends is None:  # its test ended meanwhile
        return None
    if _same(flat, item):
        # Its ledger is recording, in this process: its teardown, or a fork, takes the entries out.
        next(sends.unchanged)
        return True
    return entry


def _no_fast_send(item: Any, channel: Any, owner: str, past: frozenset[str], led: Any, pickled: bool = False) -> Any:
    return NotImplemented


# The per-message fast path, asked by the wrappers before the Python one: the compiled gate's, or
# (not built, or ALIASCHECK_GATE=python) none for a send and the reference for a receipt.
_flat_send: Any = gate._compiled.flat_send if gate.COMPILED else _no_fast_send
_flat_taken: Any = gate._compiled.flat_taken if gate.COMPILED else _flat_taken_here
_flat_fed: Any = gate._compiled.flat_fed if gate.COMPILED else _flat_fed_here
_flat_synced: Any = gate._compiled.flat_synced if gate.COMPILED else _flat_synced_here


_same: Any = gate._compiled.flat_same if gate.COMPILED else judge.same_flat


def configure() -> None:
    """Point the compiled fast path at this module's tables (at import, and at each install: a second
    import of this module must not leave it reading another's)."""
    if gate.COMPILED:
        gate._compiled.configure_messages(_flat, _received, _sends, _pickled_flat, _pickled, _pending_flat, _by_serial,
                                          _fed_ids, _synced_ids)


configure()


def _received_flat(item: Any, entry: _Flat) -> None:
    """*item*, taken off an in-process channel, was sent flat as *entry* (popped by :data:`_flat_taken`)
    and changed since: judged as a Record. Never raises."""
    try:
        _judge_received(_flat_record(*entry))
    except Exception as exc:  # aliascheck's own bug must not break the receive
        led = _ledger.current
        if led is not None:
            judge.internal(led, QUEUE, exc)


def _count(led: Any, owner: str) -> None:
    counter = _handed.get((id(led), owner))
    if counter is None:
        counter = _handed.setdefault((id(led), owner), itertools.count())
    next(counter)


def _checked(led: Any) -> None:
    checks = _checks.get(id(led))
    next(checks if checks is not None else _checks.setdefault(id(led), itertools.count()))


def _unsend(store: dict[int, Any], rec: Any) -> None:
    """The send raised (a full or closed queue): nothing was sent (*rec*: a Record, or a flat message)."""
    if isinstance(rec, Record):
        key = id(rec.key)
        if store.get(key) is rec:
            store.pop(key, None)
    elif rec is not None:
        table = _pickled_flat if store is _pickled else _flat
        key, sends = id(rec[0]), _by_serial.get(rec[2])
        with _lock:
            if table.get(key) is not rec:
                return
            del table[key]  # its pending list's entry is skipped: no longer in the table
        if sends is not None:  # (its test may have ended meanwhile: nothing to count then)
            next(sends.unsent)  # not sent after all: taken off its count at teardown


def _receive(key: Any, calls: bool = True) -> Record | None:
    """*key* reached its receiver: judge it once more, then it is the receiver's (its record returned,
    None when it had none). *calls* False: taken off a queue, where a call's work item (an executor's
    own queue) is not yet received: it is when it runs. Never raises."""
    rec = _received.get(id(key))  # a record holds its key: the id is this object's
    if rec is not None:
        if not calls and rec.kind == "call":
            return None
        if _received.pop(id(key), None) is not rec:  # another thread's receive took it meanwhile
            return None
        _judge_received(rec)
        if not calls and not rec.flagged and rec.receivers <= 1:
            _taken_off(rec, key)
    elif _flat and (entry := _flat_taken(key)) is not None and entry is not True:
        _received_flat(key, entry)
    return rec


# -- late serialisation ------------------------------------------------------------
# Thread ident -> the call (a work item's, a thread's arguments) that thread is running. A worker that
# serialises later (torch.save, pickle.dump in a background checkpoint writer) writes what its
# arguments hold then: the tensors and arrays it was handed must still hold the bytes they held at
# the hand-off. Only their bytes are judged there: what the worker does to its own containers (a key
# it adds) is its intent, and only buffers change in place behind a reference (an optimizer's step).
_serialising: dict[int, Record] = {}


def _resubmitted(args: Any, kwargs: Any) -> None:
    """This thread gives a dict or list to another call (a submit) while an earlier call it was given
    to still runs: if this thread wrote into it since that call took it, the running call's value
    changed under it (a sweep's one config dict set for the next weight and submitted again while the
    first calls read it). A stop flag the sender sets for a running worker is never given again, so
    it is not judged here. Never raises."""
    boundary = sys.modules.get("aliascheck.boundary.runtime")
    if boundary is None or not boundary._on:
        return
    try:
        me = threading.current_thread()
        given = [x for x in (*args, *kwargs.values()) if type(x) in (dict, list)]
        written = [x for x in given if boundary.written_by(x, me)]
        if not written:
            return
        for rec in list(_serialising.values()):
            if rec.flagged or rec.thread is not me or rec.kind != "call":
                continue
            rargs, rkwargs = rec.obj
            if any(x is y for x in written for y in (*rargs, *rkwargs.values())):
                _judge(rec, RESUBMITTED)
    except Exception:  # pragma: no cover - aliascheck's own bug must not break the submit
        pass


# Waits: a thread that waited for another (an Event, a Condition, a queue's get, a future's result) since
# it sent a call its arguments has synchronised with someone: an emptying write after that may be the
# hand-off's second half (the call signalled that it copied them). Thread ident -> the serial of its
# last wait; _serial[0] is the last serial given (a send notes it).
_waits: dict[int, int] = {}
_serial = [0]


def waited() -> None:
    """This thread waited for another and was woken (never raises: plain dict and list writes)."""
    _serial[0] += 1
    _waits[threading.get_ident()] = _serial[0]


def emptied(obj: Any) -> None:
    """This thread left *obj* (a dict or list) empty, a call it was given to running in another thread
    that has not written into it: the sender reuses the buffer the call reads (``t = Thread(target=upload,
    args=(rows,)); t.start(); rows.clear()``). Judged for that call now. A container the call fills
    itself (a results list it appends to, that the sender drains) is the call's own: not judged. Never
    raises. Not when this thread waited for another since it sent the call (:func:`waited`): a call that
    copies its arguments and signals, then the sender clears them, is that hand-off."""
    try:
        me = threading.get_ident()
        for ident, rec in list(_serialising.items()):
            if ident == me or rec.flagged or rec.kind != "call" or _waits.get(me, 0) > rec.sent:
                continue
            args, kwargs = rec.obj
            if any(x is obj for x in (*args, *kwargs.values())):
                _judge(rec, EMPTIED)
    except Exception:  # pragma: no cover - aliascheck's own bug must not break the program's write
        pass


def running(rec: Record | None) -> int | None:
    """This thread starts running the call *rec* (None: not a recorded call); returns the token for
    :func:`done`."""
    if rec is None or rec.kind != "call":
        return None
    ident = threading.get_ident()
    _serialising[ident] = rec
    return ident


def done(ident: int | None) -> None:
    if ident is not None:
        _serialising.pop(ident, None)


# Thread ident -> {id of a message taken off a queue by that thread, or of one of a tuple message's
# items: (its record without the value, with the part's fingerprint at the receipt; weak references to
# the tensors and arrays in it)}. A writer thread that takes checkpoints off a queue and serialises them
# later (at a flush) writes what they hold then. Nothing of the message is held: a part found again by
# id is the same one only while the very buffers it held are alive and still in it.
_taken_parts: dict[int, dict[int, tuple[Record, list[Any], bool]]] = {}
_TAKEN_PER_THREAD = 32


def _taken_off(rec: Record, message: Any) -> None:
    """*message* was taken off a queue by this thread, unchanged: remember its parts that hold tensors
    or arrays, for a serialisation by this thread later (:func:`serialised`). Never raises."""
    try:
        parts = [("", message)]
        if type(message) in (tuple, list):
            parts += [(f"[{i}]", item) for i, item in enumerate(message)]
        mine: dict[int, tuple[Record, list[Any], bool]] | None = None
        boundary = sys.modules.get("aliascheck.boundary.runtime")
        for path, part in parts:
            buffers = _buffers_in(part)
            # A dict or list in it: another task's or thread's write into it before the flush is judged
            # too, told by the boundary (which task or thread wrote it); nothing of it is held.
            container = type(part) in (dict, list) and boundary is not None and boundary.taken(part)
            if not buffers and not container:
                continue
            twin = Record.__new__(Record)
            for slot in Record.__slots__:
                object.__setattr__(twin, slot, getattr(rec, slot, None))
            twin.obj, twin.flat, twin.fp, twin.exclude = None, None, fingerprint(part), ()
            twin.label = f"{rec.label}{path}" if path else rec.label
            if mine is None:
                mine = _taken_parts.setdefault(threading.get_ident(), {})
            mine[id(part)] = (twin, [weakref.ref(b) for b in buffers], container)
            while len(mine) > _TAKEN_PER_THREAD:
                del mine[next(iter(mine))]
    except Exception as exc:  # pragma: no cover - aliascheck's own bug must not break the receive
        judge.internal(rec.ledger, rec.owner_name, exc)


def _buffers_in(value: Any, levels: int = 3, width: int = 4096) -> list[Any]:
    """The tensors and arrays in *value*'s first *levels* of dicts, lists and tuples (C-level reads)."""
    kinds = probe._owned_buffer_types()
    if not kinds:
        return []
    if type(value) in kinds:
        return [value]
    found: list[Any] = []
    level = [value] if issubclass(type(value), (dict, list, tuple)) else []
    for _ in range(levels):
        if not level:
            break
        refs = gc.get_referents(*level)
        if len(refs) > width:
            return []
        found += [r for r in refs if type(r) in kinds]
        level = [r for r in refs if issubclass(type(r), (dict, list, tuple))]
    return found


def _serialised_taken(obj: Any) -> None:
    mine = _taken_parts.get(threading.get_ident())
    entry = mine.get(id(obj)) if mine else None
    if mine is None or entry is None:
        return
    twin, refs, container = entry
    if container:  # a dict or list: judged whole when another task or thread wrote into it since the receipt
        boundary = sys.modules.get("aliascheck.boundary.runtime")
        if boundary is not None and boundary.written_by_another(obj):
            mine.pop(id(obj), None)
            led = twin.ledger
            if twin.flagged or not led.recording or led.pid != _pid:
                return
            _checked(led)
            judge.message_changed(twin, SERIALISED_LATE, now=(None, fingerprint(obj)))
            return
        if not refs:
            return
    held = [r() for r in refs]
    if any(b is None for b in held) or not {id(b) for b in held} <= {id(b) for b in _buffers_in(obj)}:
        mine.pop(id(obj), None)  # another object at that id now
        return
    led = twin.ledger
    if twin.flagged or not led.recording or led.pid != _pid:
        return
    _checked(led)
    judge.message_changed(twin, SERIALISED, now=(None, fingerprint(obj)), only_bytes=True)


def serialised(obj: Any) -> None:
    """This thread serialises *obj* now: if it is running a recorded call and *obj* is one of the
    arguments that call was handed, or it took *obj* off a queue (a writer thread flushing), *obj*'s
    tensors and arrays are judged against the hand-off (once a finding, no more). What the worker made
    itself and serialises (its own ``state_dict()`` of a model it trains) is not a value it was handed.
    Never raises."""
    if _taken_parts:
        try:
            _serialised_taken(obj)
        except Exception:  # pragma: no cover - aliascheck's own bug must not break the save
            pass
    rec = _serialising.get(threading.get_ident())
    if rec is None or rec.flagged:
        return
    led = rec.ledger
    if not led.recording or led.pid != _pid:
        return
    try:
        args, kwargs = rec.obj
        within = next((f"[0][{i}]" for i, arg in enumerate(args) if arg is obj), None) or next(
            (f"[1][{key!r}]" for key, arg in kwargs.items() if arg is obj), None)
    except Exception:  # pragma: no cover - (args, kwargs) is this module's own tuple
        return
    if within is None:
        return
    _checked(led)
    judge.message_changed(rec, SERIALISED, only_bytes=True, within=within)


def _judge_received(rec: Record) -> None:
    """A receiver took *rec*'s message (popped): judged against the send. One object sent to several
    receivers stays recorded until the last takes it: what one receiver does to it is a change for the
    others (each must get what was sent), so those receipts are judged as ``receive-shared``."""
    if rec.kind == "call" and rec.owner_name in _STARTED and not rec.flagged and (refs := _back_references(rec)):
        rec.exclude = (*rec.exclude, *refs)
    if not rec.flagged:
        flat = rec.flat  # the common message: a flat one, unchanged (judge.same_flat, at C speed)
        if flat is not None and judge.same_flat(flat, rec.obj):
            led = rec.ledger
            if led.recording and led.pid == _pid:
                _checked(led)
        else:
            _judge(rec, SHARED_RECEIPT if rec.taken else "receive")
    if rec.receivers > 1 or rec.taken:  # one object several receivers take: who writes it, for whom
        boundary = sys.modules.get("aliascheck.boundary.runtime")
        if boundary is not None:
            boundary.shared_receipt(rec.key)
    if rec.receivers > 1:
        rec.receivers -= 1
        rec.taken = True
        _received.setdefault(id(rec.key), rec)  # unless the object was sent afresh meanwhile
    if rec.kind == "call":  # what the receiver took may change by its hand from now on
        try:
            args, kwargs = rec.obj
            taken = _taken.setdefault(id(rec.ledger), set())
            given = [x for x in (*args, *kwargs.values()) if type(x) not in mutability.ATOMS]
            taken.update(map(id, given))
            boundary = sys.modules.get("aliascheck.boundary.runtime")
            if boundary is not None:  # who writes its dicts and lists from now on (a sender's write: _theirs)
                for x in given:
                    if type(x) in (dict, list):
                        boundary.taken(x)
        except Exception as exc:  # pragma: no cover - (args, kwargs) is this module's own tuple
            judge.internal(rec.ledger, rec.owner_name, exc)


def _judge(rec: Record, check: str) -> None:
    """Judge a message now, if its ledger is still recording in this process (counted as a check)."""
    led = rec.ledger
    if not led.recording or led.pid != _pid:
        return
    _checked(led)
    judge.message_changed(rec, check, taken=_theirs(rec, _taken.get(id(led))) if rec.kind == "call" else None)


def _theirs(rec: Record, taken: set[int] | None) -> set[int] | None:
    """Of the arguments receivers already took (*taken*), those a change may be theirs in: a shared
    progress dict the workers write is theirs; one the sender itself wrote last since a worker took it
    (it changed the dict between two submits of it) is not."""
    boundary = sys.modules.get("aliascheck.boundary.runtime")
    if not taken or boundary is None or not boundary._on:
        return taken
    args, kwargs = rec.obj
    sender = rec.thread
    mine = {id(x) for x in (*args, *kwargs.values()) if id(x) in taken and boundary.written_by(x, sender)}
    return taken - mine if mine else taken


def _synchronized() -> None:
    """This thread received something (a reply, a result): its pickled messages are judged now, and
    those the feeder has pickled become the receiver's.

    A sender may change what it sent once it knows the receiver has it: ``submit(work, cfg).result()``
    then ``cfg["n"] = 2``, or a ``put`` answered on another queue. Receiving anything after the send
    is that knowledge; a change made before it is the race, whatever the feeder's timing.
    Never raises.
    """
    try:
        me = threading.get_ident()
        # Nothing handed over to this thread (the common receive): no lock. A feed adding to its lists
        # meanwhile is handed over at the next receive, as one a moment later would be.
        if me not in _pending and me not in _pending_flat:
            return
        with _lock:
            mine = _pending.pop(me, None)
            flat = _pending_flat.pop(me, None)
        if flat:
            _synchronized_flat(flat)
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


def _tally(led: Any, handed: list[tuple[str, int]], checks: Any, also_checked: int = 0) -> None:
    """Add what this adapter recorded and checked to the ledger's counters (the summary's figures)."""
    with led.lock:
        for owner, n in handed:
            led.stats.handovers += n
            led.stats.owners[owner] += n
        led.stats.checked += also_checked + (next(checks) if checks is not None else 0)


def teardown(ledger: Any) -> None:
    """Judge what this test sent and nobody received (and every pickled message), then drop it all."""
    _waits.clear()  # threads of this test: a later one at a reused ident has waited for nothing yet
    _on_channel.clear()
    mine: list[tuple[dict[int, Record], Record]] = []
    with _lock:
        for store in (_received, _pickled, _buffers):
            for key, rec in list(store.items()):
                if rec.ledger is ledger:
                    del store[key]
                    mine.append((store, rec))
        for key, entry in list(_flat.items()):
            if _ledger_of(entry) is ledger:
                del _flat[key]
                mine.append((_received, _flat_record(*entry)))
        for key, entry in list(_pickled_flat.items()):
            if _ledger_of(entry) is ledger:
                del _pickled_flat[key]
                rec = _flat_record(*entry, records.SYNC)
                rec.fed, rec.synced = key in _fed_ids, key in _synced_ids
                mine.append((_pickled, rec))
        _fed_ids.difference_update([k for k in _fed_ids if k not in _pickled_flat])
        _synced_ids.difference_update([k for k in _synced_ids if k not in _pickled_flat])
    queued: dict[int, set[int]] = {}  # for _still_queued; the records hold the containers: ids stay theirs
    for store, rec in mine:
        if rec.flagged:
            continue
        if store is _buffers:
            buf = rec.key()
            if buf is not None:
                _judge_buffer(rec, buf, "teardown")
        elif store is not _received or rec.kind != "message" or _still_queued(rec, queued):
            _judge(rec, SHARED_RECEIPT if rec.taken else "teardown")
    with _lock:
        for ident, msgs in list(_pending.items()):
            left = [m for m in msgs if m.ledger is not ledger]
            if left:
                _pending[ident] = left
            else:
                _pending.pop(ident, None)
        for ident, entries in list(_pending_flat.items()):
            left_flat = [e for e in entries if _ledger_of(e) is not ledger]
            if left_flat:
                _pending_flat[ident] = left_flat
            else:
                _pending_flat.pop(ident, None)
        _opaque.difference_update([k for k in _opaque if k[0] == id(ledger)])
        _overflow.discard(id(ledger))
        for ident, parts in list(_taken_parts.items()):  # a writer thread may still be taking: pops
            for key, (twin, _refs, _container) in list(parts.items()):
                if twin.ledger is ledger:
                    parts.pop(key, None)
            if not parts:
                _taken_parts.pop(ident, None)
        _taken.pop(id(ledger), None)
        handed = [(key[1], next(_handed.pop(key))) for key in list(_handed) if key[0] == id(ledger)]
        contexts = _contexts.pop(id(ledger), [])
        for site, context in list(_sends.items()):
            if context[2] is ledger:
                del _sends[site]
        for c in contexts:
            _by_serial.pop(c.serial, None)
        flat_sent = [(c.owner, next(c.sent) - next(c.unsent)) for c in contexts]
        also_checked = sum(next(c.unchanged) for c in contexts)  # received unchanged: checked once each
        checks = _checks.pop(id(ledger), None)
    try:
        _tally(ledger, handed + flat_sent, checks, also_checked)
    except Exception:  # pragma: no cover - counters only
        pass
