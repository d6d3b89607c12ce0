"""Boundary handovers: live objects the project keeps, and copies that still share.

No state protocol is involved. The project's code is marked at import (:mod:`aliascheck.boundary.rewrite`),
and each marked statement reports here once it has run:

- :func:`kept`: a value stored into a container or an attribute;
- :func:`bound`: a call's result bound to a name;
- :func:`copied`: an explicit shallow copy bound to a name;
- :func:`wrote`: the project's own in-place write to an object.

A kept value is a record (:class:`aliascheck.records.Record`, kind ``kept``) only when someone
besides the keeper (and the project's own name for it) still refers to it at the keep, or its
memory is another object's (a view): a value the project alone holds cannot be changed behind
its back, and is not fingerprinted at all. A record is judged at the next keep at the same line
and when the test ends (rule *Kept*: :func:`aliascheck.boundary.rules.kept`). A copy's shared parts are
judged at the project's write into one of them (rule *Copied*: :func:`aliascheck.boundary.rules.copied`). The
rules decide on facts this module's per-test state answers (who holds, who wrote, what changed);
the reports go through the one producer, :meth:`aliascheck.ledger.Ledger.report`.
"""

from __future__ import annotations

import collections
import contextvars
import ctypes
import dis
import functools
import gc
import itertools
import operator
import sys
import threading
import types
import weakref
from collections.abc import Iterable
from typing import Any

import aliascheck.gate as gate
import aliascheck.guard as guard
import aliascheck.instrument as instrument
import aliascheck.sites as sites

from .. import mutability, probe
from ..diff import Change, diff
from ..fingerprint import Fingerprint, Limits
from ..fingerprint import fingerprint as _full_fingerprint
from ..kinds import KEPT_AGAIN, LOAD_METHODS, RECEIVER_WRITE, STATE_METHODS
from ..records import Record
from ..sites import capture
from . import rules

_on = False  # set while a session records: every hook returns at once otherwise
# The exception types the marked code's handlers name, read from here: a module may bind its own
# ``Exception`` or ``NameError``, and the marked code looks up no global the source does not.
Exception, NameError, BaseException = Exception, NameError, BaseException  # noqa: A001,PLW0127
# ids of what the test's records hold (a kept value and its parts, a value a library kept, a part a
# copy shares): the marked code calls wrote() only for these. One set, cleared in place.
WATCHED: set[int] = set()
ATOMS = mutability.ATOMS
ONLY_ATOMS = ATOMS.issuperset  # of an iterable of types: stops at the first other one
QUIET_WIDTH = 256  # a dict or list of atoms longer than this is not told quiet (see _atoms_only)
# Array and tensor types met so far: an in-place write into one (``sample -= mean``) may go into
# memory a record holds through another object (a view's base), so the marked code always reports it.
BUFFERS: set[type] = set()
_sites: dict[int, tuple[str, str]] = {}  # site number -> (keeper text, how): the marked statements
_extras: dict[int, Any] = {}  # site number -> a passing statement's [(call text, [argument texts])]
COPY_WIDTH = 256  # the objects of a copy's shared part looked at (a config, a board): more is not indexed


def register(base: int, table: tuple[tuple[str, str, Any], ...]) -> None:
    """A marked module's sites, numbered from *base* (its first statement calls this when it runs:
    the numbers are fixed when it is marked, the same in every process)."""
    for i, (keeper, how, extra) in enumerate(table):
        _sites[base + i] = (keeper, how)
        if extra is not None:
            _extras[base + i] = extra


class _Keep:
    """Where a kept value sits: its keeper, and the key, index or name it is under."""

    __slots__ = ("ref", "key", "how", "site", "epoch", "giver", "producer", "code", "memory", "count", "actor")

    def __init__(self, keeper: Any, key: Any, how: str, site: int) -> None:
        # Weak when it can be: a keep must not keep its keeper alive.
        self.ref: Any = _reference(keeper) if keeper is not None else _GONE
        self.key = key
        self.how = how  # item, attr, name
        self.site = site
        self.epoch = 0  # the store's write clock at the keep: later writes by the project are its intent
        self.giver = ""  # what handed the value out: a library call, or the library calling a project callback
        # The id of the code of the project's generator that yielded the value (None: none did). Its
        # writes after the keep are its own intent, not the keeper's: for the keeper, a change.
        self.producer: int | None = None
        self.code = 0  # the id of the code of the function that kept it
        # A container holding arrays or tensors over memory another process or an array's owner writes:
        # judged at the next keep, as an array is (its keeper may be a function's local, gone at teardown).
        self.memory = False
        self.count = 1  # the site's keeps so far, this one included (sampling past SITE_BUDGET)
        self.actor = _actor()  # the keeping task or thread: another receiver's write is not its intent

    @property
    def keeper(self) -> Any:
        return self.ref()

    def find(self, value: Any) -> Any:
        """The keeper, if it is alive (found among *value*'s referrers when known by id)."""
        ref = self.ref
        return ref.find(value) if type(ref) is _ById else ref()

    @property
    def strong(self) -> bool:
        return type(self.ref) is _Strong and self.ref is not _GONE


class _Last(tuple[Any, int, bool]):
    """The object a site kept last, and how many keeps in a row kept it (a history of one object).

    ``(a weak reference to the object, or its id, repeat, held strongly)``. Never held: an object
    dies when the program lets go of it (blinker's weak receivers, a test counting the objects it
    made). A dict, list or tuple, which allows no weak reference, is known by its id; a repeat told by
    id alone is believed for an item keep only while the keeper still holds the object at another
    place (:func:`_kept_before`): a history of one object is one only while it is held, and then no
    other object has its id. A tuple, so that the gate makes one at C speed when a project
    generator's item is kept (:func:`aliascheck.gate.keep`).
    """

    __slots__ = ()

    @property
    def value(self) -> Any:
        return self[0] if self[2] else self[0]()

    @property
    def repeat(self) -> int:
        return self[1]

    def holds(self, value: Any) -> bool:
        """Is *value* the object this entry refers to? By id where no reference may be taken: the
        object is then held by its keeper (a history is only one while it is), so no other has its id."""
        ref = self[0]
        if type(ref) is int:
            return ref == id(value)
        if self[2]:
            return ref is value
        if type(ref) is _ById:
            return ref.id == id(value) and ref.type is type(value)
        return bool(ref() is value)


def _last(value: Any, repeat: int) -> _Last:
    if _weak(type(value)):
        return _Last((_ById(value) if _weakref_seen(value) else weakref.ref(value), repeat, False))
    return _Last((id(value), repeat, False))


def _kept_before(last: _Last, keeper: Any, value: Any) -> bool:
    """A repeat *last* tells by id is the very object kept before: the keeper (a list, dict or deque)
    still holds *value* at another place among its newest items. Not asked of a keeper of another type,
    nor of a repeat told by a weak reference (exact)."""
    kind = type(keeper)
    if type(last[0]) is not int or kind not in _HISTORIES:
        return True
    items = keeper.values() if kind is dict else keeper
    tail = itertools.islice(reversed(items), _MEMORY_TAIL)  # type: ignore[call-overload]
    return sum(map(operator.is_, tail, itertools.repeat(value))) >= 2


def _weakref_seen(obj: Any) -> bool:
    """Would the program see a weak reference to *obj*? NumPy refuses to resize an array that owns
    its memory once anything refers to it weakly (``ndarray.resize``, refcheck on). Such an array is
    known by id instead; a view (whose base is set) cannot be resized anyway."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and type(obj) is numpy.ndarray and obj.base is None


NOLAST = _Last((None, 0, True))  # SEEN's default for the marked code: no object kept yet


# Whether a type's objects can be weakly referenced (seeded: tracked by gc from the start, see
# mutability.Seed).
_WEAK: dict[type, bool] = {mutability.Seed: True}


class _Strong:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> Any:
        return self.value


class _ById:
    """A keeper that cannot be weakly referenced (a list, a dict), known by id and type: found again
    among the kept value's referrers when judged, so that a keep never keeps its keeper alive."""

    __slots__ = ("id", "type")

    def __init__(self, obj: Any) -> None:
        self.id, self.type = id(obj), type(obj)

    def __call__(self) -> Any:
        return None

    def find(self, value: Any) -> Any:
        for ref in gc.get_referrers(value):
            if id(ref) == self.id and type(ref) is self.type:
                return ref
        return None


class _ThroughAttribute:
    """A kept attribute's value, found again through its (weakly held) object: the value while the
    object is alive and its attribute still is that value (by id: then it is alive), else None."""

    __slots__ = ("owner", "name", "id")

    def __init__(self, owner: Any, name: str, value: Any) -> None:
        self.owner, self.name, self.id = owner, name, id(value)

    def __call__(self) -> Any:
        owner = self.owner()
        if owner is None:
            return None
        try:
            value = rules.attribute(owner, self.name)
        except Exception:
            return None
        return value if id(value) == self.id else None


def _reference(obj: Any, seen: bool = False) -> Any:
    """A weak reference to *obj*, or its id where its type allows no weak one (a dict, a list) or
    the program would see one (:func:`_weakref_seen`) and *seen* does not allow that; a frame (a
    test function's, held until the test's end check) strongly."""
    if _weak(type(obj)) and (seen or not _weakref_seen(obj)):
        return weakref.ref(obj)
    return _Strong(obj) if type(obj) is types.FrameType else _ById(obj)


_GONE = _Strong(None)  # the reference of a keeper not kept (a function's frame)


def _weak(kind: type) -> bool:
    weak = _WEAK.get(kind)
    if weak is None:
        weak = _WEAK[kind] = kind.__weakrefoffset__ != 0
        if not weak and kind not in ATOMS:
            HELD.add(kind)
    return weak


# Types whose objects the marked code takes as a site's last by id (a project generator's item, a
# project caller's argument: :func:`aliascheck.gate.keep`): those that cannot be weakly referenced, and
# any other type but an array's once the runtime has met one of the project's own (:func:`kept`).
HELD: set[type] = {dict, list, tuple, set}


class _Test:
    """What one test kept: records, the last per site, the project's writes, copies' shared parts."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.last: dict[int, Record] = {}
        # site -> (the object kept there last, how many keeps in a row kept it): a history of one
        # object. The object itself, not its id: a freed dict's id is soon another dict's.
        self.seen: dict[int, _Last] = SEEN
        self.counts: dict[int, int] = {}
        # site -> the bytes its fingerprints took so far (records and judgements): a site past
        # SITE_BUDGET records and judges only at its 2**k-th keep of a new object (_sampled_out)
        self.spent: dict[int, int] = {}
        self.written: dict[int, int] = {}  # id -> epoch of the project's last write
        self.writers: dict[int, int] = {}  # id -> id of the code of the function that wrote it last
        self.produced: set[int] = set()  # ids whose writer is told (a generator's yielded or kept items)
        self.tuples_looked: set[int] = set()  # yield sites whose tuple holders a project loop built were looked for
        self.not_reused: set[int] = set()  # REUSED keep sites that kept a new object after all (_reused)
        self.rebinding: Any = None  # a name's new value while its old one is judged (same_parts_again)
        self.fresh: tuple[Record, Fingerprint] | None = None  # the last record judged, and its value then
        # id of an array or tensor a project generator yielded -> (the generator's code id, the
        # write clock at that yield, looks left): a refill before the next yield is then seen.
        self.yields: dict[int, tuple[int, int, int]] = {}
        # (a returning function's code, its instance's id) -> the object it returned last; those that
        # returned several objects (lookups: never one refilled object handed out again)
        self.returned_last: dict[tuple[int, int], int] = {}
        self.lookups: set[tuple[int, int]] = set()
        # id of such an object its producer refilled and handed out again -> (the return or yield site,
        # the producer's code id, "return" or "yield", its code and line): a list bound later holding it
        # twice is judged
        self.refills: dict[int, tuple[int, int, str, Any, int]] = {}
        # the same objects' memory by id: [start, end), and the object weakly; a list bound later holding
        # views of it (``[f[:2] for f in gen]``, ``torch.from_numpy`` of each item) holds that memory at
        # several places
        self.refill_spans: dict[int, tuple[int, int, Any]] = {}
        # yield name[...] site -> (generator code id, the last view weakly, its bytes' digest or None,
        # the count of references to the memory's owner with no view of it alive)
        self.views: dict[int, tuple[int, Any, bytes | None, int]] = {}
        # id of a mutable value in a task's context copy -> {id(task): (the task weakly, its ContextVar,
        # the value's fingerprint at the copy, the write clock then)}; and -> {id(writing task): clock}
        self.contexts: dict[int, dict[int, tuple[Any, Any, Fingerprint, int]]] = {}
        self.context_writes: dict[int, dict[int, int]] = {}
        # id of a ContextVar's mutable default, read by the project -> (its ContextVar, its fingerprint
        # when first read, the write clock then); and -> {who wrote it (a task's id, else a thread's
        # ident): clock}. Every context shares a default: no copy is ever made of it.
        self.defaults: dict[int, tuple[Any, Fingerprint, int]] = {}
        self.default_writes: dict[int, dict[int, int]] = {}
        self.born: dict[int, int] = {}  # id of a task (or context copy) -> the write clock at its creation
        self.first_read: dict[tuple[int, int], int] = {}  # (id of a default, who) -> the clock at its first read
        self.default_parts: dict[int, int] = {}  # id of an object a default held at a read -> id of the default
        self.parts_seen: dict[int, int] = {}  # id of a default -> its length when its parts were last watched
        # id of the one object a repetition put at every position (``[[0] * n] * n``) -> (the
        # container's id and type, the creation site): not held, found again as a write's root
        self.repeated: dict[int, tuple[int, type, int, Any]] = {}
        # id of such a container -> (id of the one object it repeats, that object's length then): an
        # augmented write through one position (``index[k] += [w]``) extends it in place
        self.repeated_boxes: dict[int, tuple[int, int]] = {}
        # id of a function's mutable default argument kept by the project (``self.inputs = inputs`` of
        # ``inputs=[]``) -> (its fingerprint at the first keep, the keep site, [up to 8 keepers, weakly],
        # the function's name, the write clock at the first keep)
        self.default_args: dict[int, tuple[Fingerprint, int, list[Any], str, int]] = {}
        # a ``return acc`` site of a mutable default -> (its id, the write clock, the reference count
        # and the fingerprint at that return)
        self.default_returns: dict[int, tuple[int, int, int, Fingerprint]] = {}
        # Set once a kept tensor views memory torch did not allocate: the project's writes into arrays
        # are then told by the memory they write too, (address, size) -> (epoch, the writer's code id).
        self.foreign = False
        self.frame_held = 0  # the thread whose keep held the test function's frame (sites.hold_test_frame)
        # id of one message object several receivers took -> the receiving tasks or threads (_actor); and -> the
        # thread that last wrote into it (rule Who wrote it, for whom: one receiver's write is a change
        # for another receiver that kept it)
        self.receivers: dict[int, set[int]] = {}
        self.receiver_writes: dict[int, int] = {}
        # id of a dict or list a worker took off a queue (or of a container in it) -> the taking task or
        # thread (_actor); and -> the task or thread that last wrote into it: a worker serialising it later
        # writes what it holds then, and another's write in between is the sender's (late serialisation)
        self.taken: dict[int, int] = {}
        self.taken_writes: dict[int, int] = {}
        self.taken_threads: dict[int, int] = {}  # the same, the last writer's thread ident: a sender's?
        self.written_memory: dict[tuple[int, int], tuple[int, int]] = {}
        self.epoch = 0
        self.shared: dict[int, Record] = {}  # id of a part a copy shares with its source -> the copy's record
        self.flagged: set[int] = set()  # sites already reported in this test
        self.handed: dict[int, Record] = {}  # id -> a value a library call kept (kind handed)
        self.holds: dict[int, int] = {}  # id of a keeper -> how many records refer to it
        # Found at a next keep, reported at the end: (record, changes, check, where it sat).
        self.pending: list[tuple[Record, list[Change], str, str]] = []
        # a keep site -> (the memory span its last kept array, tensor or memoryview viewed, how many
        # keeps in a row viewed that span): told in a report when those values are gone (held weakly)
        self.memory_keeps: dict[int, tuple[tuple[int, int], int]] = {}
        self.again: Any = None  # the keeper of a keep of the very object its line kept last, while judged

    # The facts the rules Kept and Handed (aliascheck.boundary.rules) decide on.
    def view(self, value: Any) -> bool:
        return _view(value)

    def changed(self, rec: Record) -> Fingerprint | None:
        return _changed(rec)

    def changes(self, rec: Record, now: Fingerprint) -> list[Change]:
        return _changes(rec, now)

    def held(self, rec: Record) -> bool:
        return _held(rec)

    def released(self, rec: Record) -> bool:
        # getrefcount's argument and the record's own reference: nobody else refers to the value.
        return sys.getrefcount(rec.obj) <= 2

    def same_parts_again(self, rec: Record) -> bool:
        """The name's new value holds some of the very objects the old one held (``best =
        list(model.parameters())`` bound again): the live objects it let go of are held again."""
        return _same_parts(rec.obj, self.rebinding)

    def by_project(self, rec: Record, epoch: int) -> bool:
        return _by_project(rec, epoch)

    def held_again(self, rec: Record) -> bool:
        return _held_again(rec)


# site -> the object kept there last: the test's, cleared in place (the marked code reads and
# writes it for a project generator's items).
SEEN: dict[int, _Last] = {}
_test = _Test()
_ledger: Any = None

# A kept value pickle cannot write (a tree of a library's nodes linked to their parents, deeper than
# pickle recurses) falls back to the Python walk: bounded here to what a keep may cost (executing's
# suite kept AST nodes at every look: 0.13 s a walk of a whole tree, 22 s for one test; 7 s bounded).
# A change within the first items is still seen; past them the walk says it stopped (a truncated
# fingerprint).
KEPT_LIMITS = Limits(max_items=2_000)


def fingerprint(value: Any) -> Fingerprint:
    return _full_fingerprint(value, KEPT_LIMITS)


def start(ledger: Any) -> None:
    global _on, _ledger, _test, ADOPTING
    _configure_gates()
    _ledger, _test, _on = ledger, _Test(), True
    ADOPTING = ledger.adopters if ledger is not None else {}
    _publish()
    _gates.unwatch()
    SEEN.clear()
    QUIET.clear()
    CLEAN.clear()
    _known_buffers()


def _known_buffers() -> None:
    """The array and tensor types of the libraries loaded now are buffers for the marked code's gates
    (a write into one is told) from the start: at the session's start and at each test's (a test module
    imports torch after the session began)."""
    for module, names in (("torch", ("Tensor",)), ("torch.nn", ("Parameter",)), ("numpy", ("ndarray",))):
        loaded = sys.modules.get(module)
        for name in names:
            kind = getattr(loaded, name, None)
            if isinstance(kind, type) and kind not in BUFFERS:
                _buffer_type(kind)


def stop() -> None:
    global _on, _ledger, _test, ADOPTING
    _on, _ledger, _test, ADOPTING = False, None, _Test(), {}
    _publish()
    _gates.unwatch()
    SEEN.clear()
    QUIET.clear()
    CLEAN.clear()


def _watch(obj: Any) -> list[int]:
    """The project's writes into *obj* and its parts matter from now on: their ids."""
    ids = [id(obj)]
    if type(obj) in _PLAIN or mutability.has_attributes(obj):
        reachable = probe.reachable

        try:
            ids += map(id, reachable(obj, depth=4))
        except Exception:
            pass
    _gates.watch(ids)
    return ids


# -- the hooks the marked code calls ------------------------------------------------


AUGMENTED = 1  # wrote()'s *how*: ``target[k] += v``
EMPTYING = 2  # ``target.clear()``, ``del target[:]``, outside any ``with`` block of its function


def wrote(target: Any, root: Any = None, how: int = 0) -> None:
    """The project changed *target* in place (``r.extend``, ``t.add_``, ``r[k] = v``, ``x += 1``),
    reached from *root* (the name its expression starts from). *how*: :data:`AUGMENTED`,
    :data:`EMPTYING` (the marking tells them from the source)."""
    if not _on or guard.busy():
        return
    _written_by_project(target, root, how & EMPTYING)
    if how & AUGMENTED and _test.repeated_boxes and id(target) in _test.repeated_boxes:
        _repeated_augmented(target)


def _written_by_project(target: Any, root: Any, emptying: int = 0) -> None:
    t = _test
    t.written[id(target)] = t.epoch
    if root is not None and root is not target and _ledger is not None and _ledger.records:
        _ledger.holder_wrote(root)  # a snapshot's part written through the snapshot: a handle
    if t.receivers and (id(target) in t.receivers or id(root) in t.receivers):
        _receiver_wrote(t, target if id(target) in t.receivers else root)
    if t.taken and (id(target) in t.taken or id(root) in t.taken):
        who = _actor()
        taker, before = t.taken.get(id(target)), t.taken_writes.get(id(target))
        t.taken_writes[id(target)] = t.taken_writes[id(root)] = who
        t.taken_threads[id(target)] = t.taken_threads[id(root)] = threading.get_ident()
        # Emptied (clear(), del x[:]; not under a lock's ``with``) by another than the receiver, who wrote
        # nothing into it: a buffer its sender reuses.
        if (emptying and taker is not None and who != taker and before != taker and type(target) in (list, dict)
                and not target and (log := sys.modules.get("aliascheck.plugins.message_log")) is not None):
            log.emptied(target)
    if CLEAN:
        CLEAN.discard(id(target))  # its next return or yield is told again
    if t.foreign and mutability.is_buffer(target) and (span := _address(target)) is not None:
        frame = _project_frame()
        t.written_memory[span] = (t.epoch, id(frame.f_code) if frame is not None else 0)
    if t.contexts and id(target) in t.contexts:
        t.context_writes.setdefault(id(target), {})[id(_current_task())] = t.epoch
    if t.repeated and id(target) in t.repeated:
        _repeated_written(target, root)
    if t.default_args and id(target) in t.default_args:
        _default_arg_judged(target, t.default_args[id(target)])
    if t.defaults and (id(target) in t.defaults or id(target) in t.default_parts):
        default = id(target) if id(target) in t.defaults else t.default_parts[id(target)]
        t.default_writes.setdefault(default, {})[_who()] = t.epoch
    if t.produced and id(target) in t.produced:  # who wrote it matters only for a generator's items
        frame = _project_frame()
        t.writers[id(target)] = id(frame.f_code) if frame is not None else 0
    if t.shared:
        rec = t.shared.get(id(target))
        if rec is not None:
            _copy_written(rec, target)
    if t.handed:
        rec = t.handed.get(id(target))
        if rec is None and mutability.is_buffer(target):  # a view: the memory is its base's
            base = getattr(target, "_base", None) if type(target).__module__.startswith("torch") else getattr(
                target, "base", None)
            rec = t.handed.get(id(base)) if base is not None else None
            if rec is not None:
                target = base
        if rec is not None and rec.obj is target:
            _handed_written(rec, target, root)


def kept(keeper: Any, value: Any, site: int, named: bool = False, attr: str | None = None,
         root: Any = None, source: int = -1, owner: Any = None) -> None:
    """*value* was stored into *keeper* at *site* (a list item, a dict key, an attribute).

    *source*: where the value came from, when the marked code knows: a loop's site (the loop's
    iterable decides), -2 for the keeping function's own parameter (its caller decides), MADE for
    what the project built of its own parts, -1 unknown. *owner*: the object the value was read
    from as an attribute (``made`` of ``made.payload``): a project object's part is the project's own.
    """
    if not _on or guard.busy():
        return
    _written_by_project(keeper, root)
    kind = type(value)
    if source == MADE and _test.receivers and id(value) in _test.receivers:
        source = -1  # one message object several receivers took (msg = self.q.get()): no one's own cells
    if kind in mutability.ATOMS or (source == MADE and not _buffer_type(kind)):  # an atom, the project's own cells
        return
    if attr is None and _copied_into(keeper):
        return  # mine[...] = frame: the bytes are copied, the value is not kept
    if source == REUSED and not _reused(site, value):
        source = MADE  # a new object at the line after all: the project's own cells
        if not _buffer_type(kind):
            return
    if source == REUSED:
        if kind in _REFILLABLE or _buffer_type(kind):
            # One object the keeping loop writes and keeps at each turn: recorded from its first keep,
            # judged when the line keeps it again (rule Kept: a history of one object), whatever its
            # count (the loop's next write is the other party).
            t = _test
            if site in t.flagged:  # reported: the line's later keeps add nothing but their count
                last = t.seen.get(site)
                if last is not None and last.holds(value):
                    t.seen[site] = _last(value, last.repeat + 1)
                return
            prev = t.last.get(site)
            _keep(keeper, value, None, "item", site, 1, refresh=True)
            rec = t.last.get(site)
            if rec is not None and rec is not prev and rec.obj is value:
                rec.adopter.giver = REFILLED_BY_KEEPER  # not handed out by anyone: the loop's own object
            return
        source = MADE
    if owner is not None and _project_type(type(owner)) and not _buffer_type(kind):
        return  # a part of the project's own object, kept elsewhere by the project
    if _project_type(kind):
        if not _buffer_type(kind) and gate._hashed_as_type(kind):
            OWN.add(kind)  # the marked code no longer calls for one kept into what nobody watches
        return  # the project's own object, kept elsewhere by the project
    if not _data(value) and not issubclass(kind, tuple) and gate._hashed_as_type(kind):
        # Never recorded when kept (_keep): a handle (a tree's element, a client, a lock), neither a
        # container of data nor memory. The marked code no longer calls for one kept into what nobody
        # watches (markdown's InlineProcessor indexing each element it makes: 171k calls in its suite).
        OWN.add(kind)
        return
    if source in FED:  # a loop over the project's own generator
        last = _test.seen.get(site)
        if last is None or not last.holds(value):  # not a history of one object: nothing to record
            _test.seen[site] = _last(value, 1)
            return
    # The keeper's slot, this frame's argument, getrefcount's, and the project's own name for it.
    others = sys.getrefcount(value) - 3 - named
    if kind in _PLAIN:
        if others <= 0 and _atoms_only(value):
            return  # a container of atoms the keeper alone holds: nothing to judge, ever
    elif _scalar(value) or mutability.immutable(value) or (kind is tuple and _own_parts(value, 0)):
        return  # a tuple of atoms and the project's own objects can change only inside them: never judged
    how = "attr" if attr is not None else "item"
    key: Any = attr
    if how == "item" and type(keeper) in _SEQUENCES:
        key = None  # found again by identity: an insert moves what follows
    producer = PRODUCERS.get(source) if source >= 0 and source in FED else None
    made = _made(source)
    if made and kind not in HELD and not _buffer_type(kind) and gate._hashed_as_type(kind):
        # The project's own value (its generator's item, its caller's argument) of a type that is no
        # array: kept once, nothing is recorded (_keep). The gate takes the next ones as the site's
        # last itself (``self.it = it`` of an iterator, a lock, a library's object, in a constructor
        # the project calls): told by id, as a list or dict is (_Last.holds).
        HELD.add(kind)
    _keep(keeper, value, key, how, site, others, made, producer)


_PLAIN = (dict, list)
_SEQUENCES = (list, collections.deque)


def _atoms_only(value: Any) -> bool:
    """A dict or list of atoms only, told at C speed (short ones: a long one is fingerprinted anyway)."""
    items = value.values() if type(value) is dict else value
    return len(value) <= QUIET_WIDTH and ONLY_ATOMS(map(type, items))


def _copied_into(keeper: Any) -> bool:
    """An array or tensor stores copies of what is assigned into it (``mine[...] = frame``, ``t[i] =
    x``): an item stored into it is a write of its bytes, not a keep. A NumPy array of objects holds
    references: its items are kept."""
    kind = type(keeper)
    if not _buffer_type(kind):
        return False
    np = sys.modules.get("numpy")
    if np is not None and isinstance(keeper, np.ndarray):
        return not np.ndarray.dtype.__get__(keeper).hasobject  # the C getter: no property of a subclass
    return True


def _buffer_type(kind: type) -> bool:
    """:func:`aliascheck.mutability.buffer_type`, noting the type for the marked code's test."""
    if mutability.buffer_type(kind):
        BUFFERS.add(kind)
        return True
    return False


def _made(source: int) -> bool:
    """The kept value came from the project's own code: a loop over a project generator, or a
    parameter of a function the project itself called."""
    if source >= 0:
        return source in FED
    if source == MADE:
        return True
    if source == -2:
        frame = _project_frame()
        caller = frame.f_back if frame is not None else None
        if caller is None or not _in_project(caller.f_code.co_filename):
            return False
        CALLERS.add(id(caller.f_code))  # the marked code's gate tells this caller's next keeps itself
        return True
    return False


MADE = -3  # a kept value's source when the project built it from its own parts (aliascheck.boundary.rewrite.MADE)
REUSED = -4  # ... when the keeping loop refills it and keeps it at each turn (aliascheck.boundary.rewrite.REUSED)
_REFILLABLE = (dict, list, set, bytearray)


def _reused(site: int, value: Any) -> bool:
    """Is a REUSED keep at *site* still one object kept again? The source says so; a new object at the
    line after all (a name bound in a way the source does not show: ``exec``, a nested function's
    ``nonlocal``) makes it the project's own value from then on, so a loop of new objects costs one
    record, not one per turn."""
    t = _test
    if site in t.not_reused:
        return False
    last = t.seen.get(site)
    if last is not None and not last.holds(value):
        t.not_reused.add(site)
        return False
    return True


REFILLED_BY_KEEPER = "written by the code that keeps it"
FED: set[int] = set()  # loop sites whose iterable (at the loop's last start) is one of the project's own generators
PRODUCERS: dict[int, int] = {}  # FED's loop site -> the id of its generator's code (the writer of what it yields)


def generator_loop(iterable: Any, site: int, passed: bool = False) -> Any:
    """``for x in iterable`` starts over a generator, or over the marked function's own parameter
    (*passed*) when the gate has not seen its caller (:func:`aliascheck.gate.loop` answers anything
    else itself): are its items the project's own? Returns *iterable* itself.

    A project generator's items are. So are the items of a parameter a project caller passed: the
    caller decides, as for the parameter itself (:func:`_made`)."""
    try:
        # A generator's code, read only from a generator itself: any other object's attributes are
        # the program's own code (``__getattr__``), never run by aliascheck.
        if _on and type(iterable) is types.GeneratorType and _in_project(iterable.gi_code.co_filename):
            FED.add(site)
            PRODUCERS[site] = id(iterable.gi_code)
            return iterable
    except Exception:
        pass
    PRODUCERS.pop(site, None)
    if passed and _on and _passed_by_project():
        FED.add(site)
    else:
        FED.discard(site)
    return iterable


def _passed_by_project() -> bool:
    """The marked function looping over its parameter was called by the project's code."""
    frame: Any = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename in _GATE_FILES:
        frame = frame.f_back
    caller = frame.f_back if frame is not None else None
    if caller is None or not _in_project(caller.f_code.co_filename):
        return False
    CALLERS.add(id(caller.f_code))  # the gate tells this caller's next loops and keeps itself
    return True


_GATE_FILES = (__file__, gate.__file__)


# The marked code's two per-statement questions, compiled where the install could (aliascheck.gate):
# GATE(value, keeper[, watch]) before a call to kept; loop(iterable, site) at every loop's start.
_gates: Any = gate._compiled if gate.COMPILED else gate  # configured below (_configure_gates)
GATE, SELF, WATCHING, BUFFER, loop = _gates.keep, _gates.receiver, _gates.watching, _gates.buffer, _gates.loop
BUFFER_OR_WATCHED, RETURNING, REFILLED = _gates.buffer_or_watched, _gates.returning, _gates.refilled


# What may hold a yielded buffer for a consumer: a library's list under construction (list(gen),
# a comprehension), the consumer's own collection.
_HOLDERS = (list, dict, set, tuple, collections.deque)
# Library iterators that hand out an item together with the next one: pairwise's previous item, which
# the consumer gets again beside the refilled one. Never iterated here (that would consume them). Not a
# tee's buffer (both branches read in lockstep leave consumed items in it) nor groupby's current item
# (its keys are computed as it goes): holding an item is not handing it out again there.
_ITER_HOLDERS = (itertools.pairwise,) if hasattr(itertools, "pairwise") else ()


def yielded(value: Any, site: int) -> None:
    """The project's generator is about to ``yield value`` (an array or tensor, :func:`aliascheck.
    rewrite.Marker._yield`). Rule *who wrote it, for whom*: if the generator wrote into this very
    buffer since it last yielded it, whoever kept an earlier item holds it at a state the generator
    has since replaced. Told by reference count, no walk: against the count at its first yield,
    one more reference is the consumer's loop variable (``for x in gen``, holding the last item
    until the next arrives); two or more are keepers (``list(gen)`` under construction, the
    consumer's list). A finding names the holder (one heap scan) and is blamed at the yield."""
    if not _on or guard.busy():
        return
    _handed_again(value, site, sys._getframe(1), "yield")


def returned(value: Any, site: int, instance: Any = None) -> Any:
    """The project's function is about to return *value*, an array or tensor (``return buf``,
    ``return self.obs``, an item of ``return self.obs, reward``: :meth:`aliascheck.boundary.rewrite.Marker.
    _return`); returns it unchanged. The rule of :func:`yielded`, for a function that returns one
    buffer it refills (an environment's ``step``, a dataset's ``__getitem__``): one more reference
    than at its first return is the caller's name for the last one; two or more are keepers.
    *instance*: a method's own instance (its first parameter), whose returns these are."""
    try:
        if _on and not guard.busy():
            _handed_again(value, site, sys._getframe(1), "return", instance)
    except Exception:  # aliascheck's own failure never reaches the function
        pass
    return value


def _handed_again(value: Any, site: int, producer: Any, verb: str, instance: Any = None) -> None:
    t = _test
    code = id(producer.f_code)
    key = id(value)
    refs = sys.getrefcount(value)
    state = t.yields.get(key)
    t.epoch += 1
    if verb == "return":
        # A function (for one instance, a method) that has returned another object since: a lookup (an
        # identity map's ``_nodes.setdefault(name, ...)``, each key its own object, written as it is
        # handed out), not one buffer it refills for every call.
        returner = (code, id(instance))
        last = t.returned_last.get(returner)
        t.returned_last[returner] = key
        if last is not None and last != key:
            t.lookups.add(returner)
        if returner in t.lookups:
            CLEAN.add(key)  # not asked about again until the project writes into it
            return
    CLEAN.add(key)  # not told again until the project writes into it (REFILLED answers no till then)
    if state is None or state[0] != code:
        t.yields[key] = (code, t.epoch, refs)
        _gates.watch((key,))  # the generator's own writes into it are told from now on, and by whom
        t.produced.add(key)
        return
    _, epoch, baseline = state
    t.yields[key] = (code, t.epoch, baseline)
    refilled = t.written.get(key, -1) >= epoch and t.writers.get(key) == code
    if refilled:
        # One object handed out, refilled, handed out again: a collection a library builds of its
        # handovers later (gather's results, an executor's map) holds it at each place (_repeated_handovers).
        t.refills[key] = (site, code, verb, producer.f_code, producer.f_lineno)
        span = _address(value) if _memory_type(type(value)) else None
        if span and span[0]:
            try:
                t.refill_spans[key] = (span[0], span[0] + max(span[1], 1), weakref.ref(value))
            except TypeError:  # not weakly referenceable: its views are not told from others'
                pass
    if not refilled or refs - baseline < 2 or site in t.flagged or _ledger is None:
        return
    if verb == "yield" and _marked_loop(producer.f_back):
        # A loop of the project's consumes it: its keeps are judged where they are (rule Kept), but for
        # one inside a tuple the loop builds (``frames.append((i, frame))``), or a library iterator
        # between the two (``for a, b in pairwise(gen())``), looked for once per site.
        if site in t.tuples_looked:
            return
        t.tuples_looked.add(site)
        found = gc.get_referrers(value)
        tuples = [r for r in found if type(r) is tuple]
        holders = [r for r in tuples if _collected(r, (found, tuples))]
        holders += [r for r in found if type(r) in _ITER_HOLDERS]
        del found, tuples
    else:
        found = gc.get_referrers(value)
        holders = [r for r in found if type(r) in _HOLDERS and type(r) is not tuple or type(r) in _ITER_HOLDERS]
        # A tuple is a keeper only when a collection holds it: zip's and enumerate's result tuple holds the
        # last item until the next (``[f(b) for b, k in zip(gen(), ks)]`` keeps nothing).
        tuples = [r for r in found if type(r) is tuple]
        holders += [r for r in tuples if _collected(r, (found, tuples, holders))]
        del found, tuples
    if not holders:
        return

    def held(h: Any) -> tuple[int, bool]:  # the most copies; a collection before a dict (an instance's own)
        if type(h) in _ITER_HOLDERS:
            return 1, True
        return sum(1 for v in (h.values() if type(h) is dict else h) if v is value), type(h) is not dict

    holder = max(holders, key=held)
    count = held(holder)[0]
    if verb == "return" and count < 2:
        return  # one slot holding the latest (``latest["obs"] = env.step(a)``), not a history: not yet
    t.flagged.add(site)
    _report_refilled(value, site, holder, count, verb, capture(2))


def _collected(item: Any, ours: tuple[Any, ...]) -> bool:
    """A list, dict or deque holds *item* (one heap scan): kept, not only named by a local. *ours*:
    the lists of this look itself."""
    return any(type(r) in _HISTORIES and not any(r is o for o in ours) for r in gc.get_referrers(item))


def _report_refilled(value: Any, site: int, holder: Any, count: int, verb: str, where: Any,
                     origin: str = "") -> None:
    """Report one object its producer refilled between handovers, held *count* times by *holder*;
    found at *where* (the handover, or the line that bound the collection), let out at *origin* (the
    handover's line; *where*'s own when not given)."""
    name = _sites[site][0]
    function = _extras.get(site) or "a generator"
    what = _type_name(value).rpartition(".")[2]
    done = "yielded" if verb == "yield" else "returned"
    change = Change("[*]", "", "", "changed", f"refilled by {function}() after it was {done}, then {done} again")
    _ledger.report("kept", [change], owner=_type_name(value), label=f"a {type(holder).__name__}",
                   check=verb, site=where.site, stack=where.stack, thread=threading.current_thread().name,
                   hint=f"{verb} a copy: {verb} {name}.copy()", origin=origin or _line(where),
                   shares=(f"one live {what} {count} times" if count > 1 else f"a live {what}")
                   + f" ({done} by {function}())")


_REPEATS_LOOKED = 64  # the items of a bound list looked at for one refilled object at several places


def _refilled_memory(item: Any, spans: dict[int, tuple[int, int, Any]]) -> tuple[int, int]:
    """(the id of the refilled object, still alive, whose memory *item* (an array, a tensor, a memoryview)
    starts in; the address it starts at), or (0, 0): not a buffer, or memory no refilled object holds."""
    if not _memory_type(type(item)):
        return 0, 0
    at = _address(item)
    if not at or not at[0]:
        return 0, 0
    for key, (start, end, ref) in spans.items():
        if start <= at[0] < end and ref() is not None:
            return key, at[0]
    return 0, 0


def _repeated_handovers(value: list[Any], site: int) -> None:
    """``rows = await asyncio.gather(...)``, ``rows = list(pool.map(parse, lines))``: a list a library
    built of the project's handovers holds one object at several places, an object its producer
    refilled between two of its returns (or yields). Every place shows the last fill: the library's
    pending work (a task's result, a future) kept the earlier handovers. Rule *Who wrote it, for whom*."""
    t = _test
    counts: dict[int, int] = {}
    views: dict[int, Any] = {}  # the refilled object's id -> the first view of its memory in the list
    places: dict[tuple[int, int], int] = {}  # (that id, a view's first byte) -> the views starting there
    for item in value[:_REPEATS_LOOKED]:
        key = id(item)
        if key not in t.refills:
            # Memory is the identity: views of a refilled buffer starting at one byte (``f[:2]``, ``f[0]``,
            # ``torch.from_numpy(f)`` of each item) are that memory at several places, each showing its
            # last fill. Views starting apart (``list(f)``: its rows) are distinct parts, not counted.
            key, start = _refilled_memory(item, t.refill_spans) if t.refill_spans else (0, 0)
            if not key:
                continue
            views.setdefault(key, item)
            places[key, start] = n = places.get((key, start), 0) + 1
            counts[key] = max(counts.get(key, 0), n)
            continue
        counts[key] = counts.get(key, 0) + 1
    for key, count in counts.items():
        produced, code, verb, function, line = t.refills[key]
        if count < 2 or produced in t.flagged or t.writers.get(key) != code:
            continue  # once per producer; the object at that id is still the one the producer wrote
        t.flagged.add(produced)
        item = views[key] if key in views else next(i for i in value if id(i) == key)
        _report_refilled(item, produced, value, count, verb, capture(2),
                         f"{sites._short(function.co_filename)}:{line} in {function.co_name}")


# -- runtime shallow copies: a task's context ---------------------------------------------

CONTEXT_TYPES = (dict, list, set)  # the mutable values a context copy shares that are judged


def context_copied(task: Any, items: Iterable[tuple[Any, Any]]) -> None:
    """*task* was created with a copy of the current context (*items*: its ContextVars and values):
    asyncio copies a context shallowly, so each mutable value in it is shared by the creator and
    every task spawned from it. Each is fingerprinted now, and the project's writes into it are told
    from now on, with the task that wrote."""
    if not _on or guard.busy():
        return
    t = _test
    t.epoch += 1  # a write from now on is after the copy
    t.born[id(task)] = t.epoch
    for var, value in items:
        if type(value) in CONTEXT_TYPES and value:
            t.contexts.setdefault(id(value), {})[id(task)] = (weakref.ref(task), var, fingerprint(value), t.epoch)
            _gates.watch((id(value),))


def _current_task() -> Any:
    """Who runs now in a context copy: the asyncio task, else the :class:`contextvars.Context` this
    thread runs a call in (``asyncio.to_thread``, ``Thread(target=ctx.run, ...)``), else None (the
    creator's plain code)."""
    asyncio = sys.modules.get("asyncio")  # never imported here: an import runs the program's __import__ hook
    try:
        task = asyncio.current_task() if asyncio is not None else None
    except RuntimeError:  # no running loop
        task = None
    return task if task is not None else getattr(_RUNNING, "context", None)


_RUNNING = threading.local()  # .context: the Context this thread runs a call in
_CONTEXT_RUN = type(contextvars.Context().run)


def context_of(call: Any) -> Any:
    """The :class:`contextvars.Context` *call* runs in, when it is one's ``run`` (bound, or the head
    of a ``functools.partial``: what ``asyncio.to_thread`` hands the executor); else None. Read at C
    level: a type test and a builtin method's ``__self__``."""
    head: Any = call.func if type(call) is functools.partial else call
    owner = getattr(head, "__self__", None) if type(head) is _CONTEXT_RUN else None
    return owner if type(owner) is contextvars.Context else None


def running_context(context: Any) -> Any:
    """This thread starts running a call in *context* (None: not in a copy); returns the token for
    :func:`left_context`."""
    if context is None:
        return None
    before = getattr(_RUNNING, "context", None)
    _RUNNING.context = context
    return (before,)


def left_context(token: Any) -> None:
    if token is not None:
        _RUNNING.context = token[0]


def _context_read(value: Any, site: int) -> None:
    """A project statement bound *value*, a value of a task's context copy: read by that very task,
    it must be what it was when the task was created, but for the task's own writes (rule *Runtime
    shallow copies*). A change by the creator or a sibling after the copy reached the task."""
    task = _current_task()
    if task is None:
        return
    copies = _test.contexts.get(id(value))
    entry = copies.get(id(task)) if copies is not None else None
    if copies is None or entry is None:
        return
    ref, var, then, since = entry
    if ref() is not task or var.get(None) is not value:
        return  # another task at this id, or this task set a value of its own
    # Changed by the project's code of another task, or the creator's, after the copy (a change no
    # marked code made is nobody's to blame here: a library's own, and not judged).
    writes = _test.context_writes.get(id(value), {})
    if not any(at >= since and writer != id(task) for writer, at in writes.items()):
        return
    now = fingerprint(value)
    if now.digest == then.digest:
        return
    del copies[id(task)]  # once per task and value
    _report_read(then, now, var, task, "context", f"set a new value ({var.name}.set({{**{var.name}.get(), ...}})) "
                 "instead of changing the shared one in place")


def _report_read(then: Fingerprint, now: Fingerprint, var: Any, task: Any, check: str, hint: str) -> None:
    """A task's (or thread's) read of *var*'s value, changed from *then* to *now* by another: reported
    at the project's statement that read it (the caller's caller's caller)."""
    changes = diff(then, now, collapse=True, reads=True)
    if changes and _ledger is not None:
        asyncio = sys.modules["asyncio"]  # a task's read: loaded

        where = capture(4)
        # The base class's name: a task factory's subclass is the program's code. A context a thread
        # runs a call in is named by the thread.
        name = (f"task {asyncio.Task.get_name(task)}" if isinstance(task, asyncio.Task)
                else f"thread {threading.current_thread().name}")
        _ledger.report("mutation", changes, owner="contextvars.ContextVar", label=var.name, check=check,
                       site=where.site, stack=where.stack, thread=name, hint=hint, origin=_line(where))


def context_got(value: Any, site: int, var: Any = None) -> Any:
    """A project statement read *value* from the ContextVar *var* (``var.get()["user"]``, ``info =
    var.get()``: :meth:`aliascheck.boundary.rewrite.Marker._context_gets`); returned unchanged. A value a task's
    context copy shares is judged as a bound one is (:func:`_context_read`); *var*'s mutable default,
    which every context shares, by :func:`_default_read`."""
    try:
        if _on and not guard.busy():
            if _test.contexts and id(value) in _test.contexts:
                _context_read(value, site)
            elif type(value) in CONTEXT_TYPES and type(var) is contextvars.ContextVar:
                _default_read(value, var)
    except Exception:  # aliascheck's own failure never reaches the statement
        pass
    return value


def _who() -> int:
    """Who runs now: the asyncio task or the context copy (:func:`_current_task`), else the thread."""
    task = _current_task()
    return id(task) if task is not None else threading.get_ident()


def _default_of(var: Any) -> Any:
    """*var*'s default, read in an empty context (a C call: nothing of the program's runs); None when
    it has none."""
    try:
        return contextvars.Context().run(var.get)
    except LookupError:
        return None


def _watch_parts(t: _Test, default: Any, most: int = 256) -> None:
    """The containers a default holds now: a write into one is a write into the default (``spans.get()
    .setdefault("names", []).append(name)``). Its own items, read at C level (an exact dict, list or set)."""
    if t.parts_seen.get(id(default)) == len(default):
        return  # nothing added since its parts were watched (a read in a loop looks once)
    t.parts_seen[id(default)] = len(default)
    items = default.values() if type(default) is dict else default
    parts = [id(x) for x in itertools.islice(items, most) if type(x) not in ATOMS]
    for part in parts:
        t.default_parts[part] = id(default)
    if parts:
        _gates.watch(parts)


def _default_read(value: Any, var: Any) -> None:
    """Rule *Runtime shallow copies*, for a ContextVar's mutable default (``ContextVar("spans",
    default={})``): no context ever holds a copy of it, so a write into it by one task (or thread) is
    a change for every other one that reads it. The first read in a test fingerprints it; a read after
    another task or thread wrote into it since is the finding (once per default and test). The
    reader's own writes are its intent."""
    if _default_of(var) is not value:
        return  # a value some context set: the rule of context copies, if any
    t = _test
    entry = t.defaults.get(id(value))
    _watch_parts(t, value)
    if entry is None or entry[0] is not var:
        t.defaults[id(value)] = (var, fingerprint(value), t.epoch)
        _gates.watch((id(value),))  # the project's writes into it are told from now on, and by whom
        return
    then = entry[1]
    me = _who()
    # Since the reader's context began: a task's creation, else (a plain thread) its own first read. A
    # write made before (a main task filling it, then spawning tasks) is what every context was given.
    task = _current_task()
    since = t.born.get(id(task)) if task is not None else None
    if since is None:
        since = t.first_read.setdefault((id(value), me), t.epoch)
    writes = t.default_writes.get(id(value), {})
    if not any(at >= since and writer != me for writer, at in writes.items()):
        return
    now = fingerprint(value)
    if now.digest == then.digest:
        return
    del t.defaults[id(value)]  # once per default
    _report_read(then, now, var, task, "context default", f"give ContextVar {var.name!r} no mutable default "
                 "(default=None), and set a new value where a context first needs one")


_default_ids: dict[int, tuple[Any, set[int]]] = {}  # id(code) -> (the code, ids of its functions' defaults)


def _function_of(code: Any, frame: Any) -> Any:
    """The function whose code is *code*, by its qualified name from the frame's globals through
    classes' own dicts (no attribute hook, no metaclass code runs); None for a nested function."""
    parts = getattr(code, "co_qualname", code.co_name).split(".")
    if "<locals>" in parts:
        return None
    obj = frame.f_globals.get(parts[0])
    for name in parts[1:]:
        if not isinstance(obj, type):
            return None
        obj = _CLASS_DICT(obj).get(name)
    if type(obj) in (staticmethod, classmethod):
        obj = obj.__func__
    return obj if type(obj) is types.FunctionType and obj.__code__ is code else None


def _is_default(code: Any, value: Any, frame: Any) -> bool:
    """Whether *value* is a default of a function whose code is *code* (found once per code: by its
    name, else among the code's referrers; read at C level: ``__defaults__``, ``__kwdefaults__``)."""
    known = _default_ids.get(id(code))
    if known is None or known[0] is not code:
        ids: set[int] = set()
        named = _function_of(code, frame)
        for f in [named] if named is not None else gc.get_referrers(code):
            if type(f) is types.FunctionType and f.__code__ is code:
                ids.update(id(d) for d in f.__defaults__ or ())
                ids.update(id(d) for d in (f.__kwdefaults__ or {}).values())
        if len(_default_ids) >= 4096:
            _default_ids.clear()
        known = _default_ids[id(code)] = (code, ids)
    return id(value) in known[1]


def default_kept(keeper: Any, value: Any, site: int) -> None:
    """``self.inputs = inputs`` ran in a function whose parameter has a new mutable default (``inputs=
    []``, :meth:`aliascheck.boundary.rewrite.Marker._assign`). When *value* is that default, every call that
    omits the argument hands its keeper the same object (rule *A default argument kept*): fingerprinted
    at its first keep and watched; kept again after a write, or written while two keepers hold it, is
    the finding."""
    if not _on or guard.busy() or type(value) not in CONTEXT_TYPES:
        return
    frame = sys._getframe(1)
    code = frame.f_code
    if not _is_default(code, value, frame):
        return  # the caller's own object, passed on purpose
    t = _test
    entry = t.default_args.get(id(value))
    if entry is None:
        entry = t.default_args[id(value)] = (fingerprint(value), site, [], getattr(code, "co_qualname", code.co_name),
                                             t.epoch)
        _gates.watch((id(value),))
    keepers = entry[2]
    if len(keepers) >= _MOST_KEEPERS:  # two that still hold it are all a verdict needs
        keepers[:] = [k for k in keepers if k() is not None]
    if len(keepers) < _MOST_KEEPERS:
        keepers.append(_reference(keeper))
    if t.written.get(id(value), -1) >= entry[4]:  # kept again after a write: judged now
        _default_arg_judged(value, entry)


_MOST_KEEPERS = 8


def default_returned(value: Any, site: int, inside: bool = False) -> Any:
    """``return acc`` of a parameter whose default is a new mutable value (``acc=[]``); returns *value*
    unchanged. When it is the default, every caller that omits the argument gets the same object: a
    call that finds the object written by the function itself since its last return, while something
    besides the function still refers to it (an earlier caller's name, list, attribute: one more
    reference than at its first return), changes what that caller holds. *inside*: put into a new value
    the function returns (``return {"tags": tags}``): each call's value is meant to be its own, so a
    write by anyone since the last return counts."""
    try:
        if _on and not guard.busy() and type(value) in CONTEXT_TYPES:
            frame = sys._getframe(1)
            code = frame.f_code
            if _is_default(code, value, frame):
                _default_again(value, site, code, inside)
    except Exception:  # aliascheck's own failure never reaches the function
        pass
    return value


def _default_again(value: Any, site: int, code: Any, inside: bool = False) -> None:
    """The function of *code* returns its default *value* again: written since its last return by the
    function itself (a registry a function hands out and its callers fill is shared on purpose), while
    something holds the earlier return."""
    t = _test
    refs = sys.getrefcount(value)
    t.epoch += 1  # a write from now on is after this return
    state = t.default_returns.get(site)
    if state is None or state[0] != id(value):
        t.default_returns[site] = (id(value), t.epoch, refs, fingerprint(value))
        t.produced.add(id(value))  # who writes into it is told from now on
        _gates.watch((id(value),))
        return
    _, since, baseline, then = state
    now = fingerprint(value)
    t.default_returns[site] = (id(value), t.epoch, baseline, now)
    refilled = t.written.get(id(value), -1) >= since and (inside or t.writers.get(id(value)) == id(code))
    if not refilled or refs <= baseline or site in t.flagged or _ledger is None:
        return
    function = getattr(code, "co_qualname", code.co_name)
    changes = diff(then, now, collapse=True, reads=True)
    if not changes:
        return
    t.flagged.add(site)
    name, _ = _sites[site]
    what = type(value).__name__
    where = capture(3)
    _ledger.report("mutation", changes, owner=_type_name(value), label=f"{function}()", check="default returned",
                   site=where.site, stack=where.stack, thread=threading.current_thread().name,
                   hint=f"give {name} the default None and make a new {what} in each call "
                        f"({name} = {what}() if {name} is None else {name})", origin=_line(where),
                   shares=f"its default argument {name}, one {what} every call gets")


def _default_arg_judged(value: Any, entry: tuple[Fingerprint, int, list[Any], str, int]) -> None:
    """*value*, a kept default argument, was written, or kept again after a write: two keepers that
    still hold it, and a change since its first keep, are the finding (once per default and test)."""
    pristine, site, keepers, function, _ = entry
    alive = [k() for k in keepers]
    holding = [k for k in alive if k is not None and any(v is value for v in (rules.instance_dict(k) or {}).values())]
    if len(holding) < 2:
        return
    now = fingerprint(value)
    if now.digest == pristine.digest or _ledger is None:
        return
    t = _test
    del t.default_args[id(value)]
    changes = diff(pristine, now, collapse=True, reads=True)
    if not changes:
        return
    name, _ = _sites[site]
    given = (_extras.get(site) or ("",))[0]
    what = type(value).__name__
    where = capture(3)
    shares = f"the one default {what} of {function}({given}=...) ({len(holding)} objects hold it)"
    _ledger.report("mutation", changes, owner=_type_name(value), label=name, check="default argument",
                   site=where.site, stack=where.stack, thread=threading.current_thread().name,
                   hint=f"give {given} the default None and make a new {what} in each call "
                        f"({given} = {what}() if {given} is None else {given})", origin=_line(where),
                   shares=shares)


def repeated(container: Any, site: int) -> None:
    """``rows = [[0] * n] * n`` or ``groups = dict.fromkeys(keys, [])`` ran (:func:`aliascheck.boundary.rewrite.
    _repetition`): when the container does hold one mutable object at every position, that object is
    watched, so that a write into it reached through the container (``rows[0][0] = 1``, ``groups[k]
    .append(w)``: addressed by one position) is told (rule *One object at several positions*). Read at
    C level: an exact list's items or dict's values, compared by identity."""
    if not _on or guard.busy():
        return
    kind = type(container)
    if kind is not list and kind is not dict:
        return
    items = list(container.values()) if kind is dict else container
    if len(items) < 2 or type(items[0]) in ATOMS or type(items[0]) is tuple:
        return
    first = items[0]
    if not all(map(operator.is_, items, itertools.repeat(first))):
        return
    _test.repeated[id(first)] = (id(container), kind, site, capture(2))
    if type(first) in _SIZED and len(items) <= _BOX_SCAN:
        _test.repeated_boxes[id(container)] = (id(first), len(first))
        _gates.watch((id(first), id(container)))
    else:
        _gates.watch((id(first),))


_SIZED = (list, dict, set, bytearray)  # exact types: their length is read at C level
_BOX_SCAN = 1024  # the positions of a repeating container looked through for its one object, at most


def _repeated_augmented(box: Any) -> None:
    """An augmented write through one position of *box* (``index[k] += [w]``): when the object the
    repetition put at every position grew or shrank since, the write went into it in place (a list's
    ``+=``, a set's ``|=``), and every other position changed with it. Nothing is read again of the
    statement's: the box's values are looked through at C level, by identity."""
    t = _test
    first_id, size = t.repeated_boxes[id(box)]
    values = box.values() if type(box) is dict else box
    first = next((v for v in values if id(v) == first_id), None)
    if first is None:
        del t.repeated_boxes[id(box)]  # no position holds it any more
        return
    if len(first) != size and id(first) in t.repeated:
        del t.repeated_boxes[id(box)]
        _repeated_written(first, box)


def _repeated_written(target: Any, root: Any) -> None:
    """The project wrote into *target*, the one object a repetition put at every position of a
    container, through *root*: the container itself, or an object whose attribute holds it. The other
    positions it still holds *target* at change with it."""
    t = _test
    box_id, kind, site, made_at = t.repeated[id(target)]
    box: Any = root if id(root) == box_id and type(root) is kind else None
    if box is None and root is not None:
        own = rules.instance_dict(root)
        if type(own) is dict:
            box = next((v for v in own.values() if id(v) == box_id and type(v) is kind), None)
    if box is None:
        return  # reached another way (``for row in rows: row[0] = 1`` writes every row as one)
    del t.repeated[id(target)]  # once per container
    positions = [k for k, v in (box.items() if kind is dict else enumerate(box)) if v is target]
    if len(positions) < 2 or site in t.flagged or _ledger is None:
        return
    t.flagged.add(site)
    name, _ = _sites[site]
    made, fix = _extras.get(site) or ("", "")
    what = type(target).__name__
    others = ", ".join(f"{name}[{k!r}]" for k in positions[1:4]) + (", ..." if len(positions) > 4 else "")
    change = Change(f"[{positions[0]!r}]", "", "", "changed",
                    f"written through {name}[{positions[0]!r}]; the same {what} is {others}")
    where = capture(2)
    _ledger.report("mutation", [change], owner=_type_name(target), label=name, check="repeated",
                   site=where.site, stack=where.stack, thread=threading.current_thread().name,
                   hint=f"make one {what} per position where it is made ({made_at.site}): {name} = {fix}",
                   origin=_line(where),
                   shares=f"one {what} at {len(positions)} positions ({made})")


def yielded_view(view: Any, base: Any, site: int) -> Any:
    """The project's generator yields *view*, a view of its buffer *base* (``yield base[...]``,
    :meth:`aliascheck.boundary.rewrite.Marker._yield_view`); returns it unchanged. Memory is the identity:
    each view is a new object, so the views a consumer kept are counted by the references to the
    memory's owner (an array's base, a tensor's storage users). When two or more besides the new one
    are alive and the view yielded before no longer holds the bytes it was yielded with, a collection
    keeps views of one buffer the generator refills: the finding, blamed at the yield. A view whose
    bytes did not change (a generator yielding distinct rows it wrote once) is not one."""
    try:
        if _on and not guard.busy() and _view(view):
            _yielded_view(view, site, sys._getframe(1))
    except Exception:  # aliascheck's own failure never reaches the generator
        pass
    return view


def _views_alive(view: Any) -> int:
    """References to the memory's owner: a numpy view's (collapsed) base, a tensor's storage users."""
    if type(view).__module__.startswith("numpy"):
        return sys.getrefcount(view.base)
    torch = sys.modules["torch"]  # a tensor's: loaded (an import would run the program's __import__ hook)
    return torch._C._storage_Use_Count(view.untyped_storage()._cdata)


def _yielded_view(view: Any, site: int, producer: Any) -> None:
    t = _test
    code = id(producer.f_code)
    count = _views_alive(view)
    state = t.views.get(site)
    if state is None or state[0] != code:
        t.views[site] = (code, weakref.ref(view), None, count - 1)  # this view is the one alive
        return
    if _marked_loop(producer.f_back):
        return  # a loop of the project's consumes it: its keeps are judged where they are (rule Kept)
    _, ref, digest, baseline = state
    previous = ref()
    kept = count - baseline - 1  # views alive besides this one
    if (previous is not None and digest is not None and kept >= 2 and site not in t.flagged
            and _ledger is not None and fingerprint(previous).digest != digest):
        _report_view(previous, site)
    # Its bytes are read only when a view is alive besides it (a collection's, or a library loop's
    # variable): a generator nobody keeps anything of pays no read.
    now = fingerprint(view).digest if kept >= 1 else None
    t.views[site] = (code, weakref.ref(view), now, baseline)


def _report_view(previous: Any, site: int) -> None:
    holders = [r for r in gc.get_referrers(previous) if type(r) in _HOLDERS]
    if not holders:
        return
    _test.flagged.add(site)
    holder = holders[0]
    name = _sites[site][0]
    function = _extras.get(site) or "a generator"
    what = _type_name(previous).rpartition(".")[2]
    where = capture(3)
    change = Change("[*]", "", "", "changed",
                    f"{name} refilled by {function}() after a view of it was yielded, then another view yielded")
    _ledger.report("kept", [change], owner=_type_name(previous), label=f"a {type(holder).__name__}",
                   check="yield", site=where.site, stack=where.stack, thread=threading.current_thread().name,
                   hint=f"yield a copy of the view (.copy(), .clone()), not a view of {name}", origin=_line(where),
                   shares=f"{what}s over one live memory (views of {name}, yielded by {function}())")


_FOR_ITER = dis.opmap["FOR_ITER"]
_COMPREHENSIONS = frozenset({"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"})


def _marked_loop(consumer: Any) -> bool:
    """The frame that resumed a generator is a ``for`` loop of the project's marked code (not a
    comprehension, not a call such as ``list(gen)``, whose frame's last instruction is the call)."""
    try:
        code = consumer.f_code
        return (code.co_name not in _COMPREHENSIONS and code.co_code[consumer.f_lasti] == _FOR_ITER
                and _in_project(code.co_filename))
    except Exception:
        return False


def through(result: Any, keeper: Any, value: Any, site: int, root: Any = None, source: int = -1) -> Any:
    """A lambda's ``keeper.append(value)`` ran (it returned *result*): the keep, then the result."""
    try:
        kept(keeper, value, site, True, None, root, source, None)
    except Exception:
        pass
    return result


def bound(value: Any, site: int, call: str = "") -> None:
    """``name = call(...)`` ran: a view of memory someone else owns, or a container of live objects.

    A name bound once to live objects themselves is a handle (``params = list(model.parameters())``
    for an optimizer): judged only once the same line binds again (a history: ``best = ...`` at each
    improvement). A view is judged either way: it is a new object, so it looks like a value.
    """
    if not _on or guard.busy():
        return
    kind = type(value)
    if kind not in _PLAIN and not _buffer_type(kind):
        UNBOUND.add(kind)  # never judged here: the marked code no longer calls for it
        return
    if _test.contexts and id(value) in _test.contexts:
        _context_read(value, site)
    if _test.refills and kind is list and _ledger is not None:
        _repeated_handovers(value, site)
    frame = sys._getframe(1)
    # A module's name is held by its namespace, a test function's by its frame until the test's end
    # check (the call phase's end, before any fixture's teardown). Any other function's local is
    # judged only at the next binding at the same line: its frame is never kept alive.
    keeper = frame.f_globals if frame.f_code.co_name == "<module>" else frame if _test_frame(frame) else None
    if kind in _PLAIN:
        if keeper is None:
            # A container of live objects bound in another function: recording it would keep it (and
            # what it holds) alive past the function's return, the program's own moment to let it go.
            return
        if _atoms_only(value) or _fresh(value):
            return  # nothing in it anyone else refers to
    elif not _view(value):
        return
    _keep(keeper, value, _sites[site][0], "name", site, 1)


def _test_frame(frame: Any) -> bool:
    """A frame the test runner called directly: the test function's own."""
    caller = frame.f_back
    return caller is not None and "_pytest" in caller.f_code.co_filename


def copied(copy: Any, source: Any, site: int) -> None:
    """``name = x.copy()`` (or ``copy.copy(x)``, ``np.copy(x)``) ran: index what the two still share."""
    if not _on or guard.busy() or copy is source:
        return
    shared = _shared_parts(copy, source)
    if not shared:
        return
    # Neither the copy nor its source is held: weakly where they can be, by id otherwise (found again
    # above the written part when the project writes into one): the record keeps nothing alive.
    rec = Record(_type_name(source), _sites[site][0], "copied", capture(2), threading.current_thread().name,
                 _ledger.test if _ledger is not None else None, None, Fingerprint(b"", None, 0, False, True),
                 None, False)
    # Weakly even where the program could see it (an object array's copy cannot be resized then):
    # the copy must be found again at the project's write into a shared part.
    rec.adopter = (_reference(copy, seen=True), _reference(source, seen=True))
    rec.adopted = [(path, "") for path, _ in shared]
    rec.shares = [(_source_text(_extras.get(site)), "")]
    t = _test
    for _path, part in shared:
        for obj in _descendants(part):
            t.shared.setdefault(id(obj), rec)
            _gates.watch((id(obj),))
    t.records.append(rec)


# -- recording ---------------------------------------------------------------------


def _keep(keeper: Any, value: Any, key: Any, how: str, site: int, others: int, made: bool = False,
          producer: int | None = None, refresh: bool = False) -> None:
    """Record a keep worth judging. *others*: references besides the keeper's and the project's
    own name; *made*: the value came from the project's own code (its generator, its caller);
    *refresh*: the same object kept again here updates its one record."""
    t = _test
    t.epoch += 1
    t.counts[site] = t.counts.get(site, 0) + 1
    last = t.seen.get(site)
    repeat = last.repeat + 1 if (last is not None and last.holds(value)
                                 and (how != "item" or _kept_before(last, keeper, value))) else 1
    t.seen[site] = _last(value, repeat)
    if repeat == 1 and _sampled_out(t, site, t.counts[site]):
        return
    prev = t.last.get(site)
    if prev is not None and prev.obj is None:  # a function's local, held weakly: see below
        old = prev.keeper()
        if old is None:  # the program let go of it (del, a return): nobody can see it change
            del t.last[site]
            prev = None
        else:
            prev.obj = old  # held again while it is judged (and reported, if it changed)
            del old  # the record's reference is aliascheck's only one (rule Kept counts the others)
    if how == "name" and prev is not None and prev.obj is value:
        return  # a name bound again to the very object it held: a handle to live state, not a history
    if prev is not None and site not in t.flagged and (
            prev.obj is value or how == "name" or _memory_type(type(prev.obj)) or prev.adopter.memory):
        # The value kept here before, while its keeper surely held it: the same object kept again
        # (a history of one object), a name bound again to a new value (it held the old one till now),
        # or an array or tensor (hashed at C speed).
        # The very object kept again by this line, as its last keep was (a history of one object, not a
        # tour that comes back to an object among others: A, B, A), is judged whoever wrote it.
        # Memory is the identity: a new array or tensor over the very memory the last keep here viewed
        # (``items.append(torch.as_tensor(buf))`` of one refilled buffer) is that value kept again.
        if how == "item" and (prev.obj is value and repeat >= 2 or prev.obj is not value and _one_memory(
                prev.obj, value)):
            t.again = keeper  # the keeper in hand: counted without looking for it among the referrers
            try:
                _judge_one(prev, KEPT_AGAIN)
            finally:
                t.again = None
        else:
            t.rebinding = value if how == "name" else None
            try:
                _judge_one(prev, "next keep")
            finally:
                t.rebinding = None
    if refresh and prev is not None and prev.obj is value and not prev.flagged:
        # The same object kept again at this line, judged just now: its one record is brought up to
        # date (the value and the write clock now) rather than joined by a second record of it.
        fresh, t.fresh = t.fresh, None
        prev.fp = fresh[1] if fresh is not None and fresh[0] is prev else fingerprint(value)
        prev.adopter.epoch = t.epoch
        return
    if (how == "name" and prev is not None and prev.kind == "kept" and not prev.flagged
            and prev.obj is not None and t.released(prev)):
        # The name let go of what it held, and nobody else holds it: nothing can read it any more, so
        # the record lets go of it too (it dies now, as without aliascheck) and is never judged again.
        prev.obj, prev.kind = None, "released"
        if t.last.get(site) is prev:
            del t.last[site]
    elif prev is not None and prev.obj is not None and not prev.flagged and prev.keeper is not None:
        prev.obj = None  # judged and unchanged (or still held elsewhere): held weakly again
    if made and (repeat == 1 or how == "attr"):
        # The project's own value, kept once: not a crossing. Nor the same one stored again into an
        # attribute (``self.callbacks = callbacks`` of each parser state lark makes of one
        # configuration): the project sharing its own object among its objects, not a history.
        return
    view = _view(value)
    # A container holding views of memory another process or an array's owner writes (a state dict a
    # torch.multiprocessing queue delivered) is live whoever else refers to it.
    memory = not view and issubclass(type(value), (dict, list, tuple)) and _holds_foreign_memory(value)
    if how == "item" and not view and not memory and type(value) in _PLAIN_OR_TUPLE:
        # A short tuple, list or dict built to hold a view of live memory (``history.append((epoch,
        # model.weight.detach()))``): the view inside is as live as it is kept alone.
        memory = _holds_view(value)
    if how in ("name", "attr"):
        # A name or attribute holding a live object itself is a handle (``self.w = model.weight``):
        # a view of live memory is a value, and so is a container of live objects, once the same
        # line keeps again (``best = list(model.parameters())`` at each improvement).
        if not view and not memory and (type(value) not in (dict, list) or _own_parts(value) or _fresh(value)):
            # Never a history: nothing to remember of it, and no reference to keep it alive past the
            # program's own (pyparsing's Forward warns from __del__ when the And holding it is dropped).
            if (last := t.seen.get(site)) is not None and last.holds(value):
                del t.seen[site]
            return
    elif (others <= 0 and repeat == 1 and not view and not memory
          and (type(value) not in (dict, list) or _own_parts(value) or _fresh(value))):
        return  # the keeper alone refers to it: nobody else can change it
    elif not _data(value) and not memory:
        return  # an object kept as an item is a handle (a model, a client), not a value
    fp = fingerprint(value)
    _spend(t, site, fp)
    rec = Record(_type_name(value), _sites[site][0], "kept", capture(3), threading.current_thread().name,
                 _ledger.test if _ledger is not None else None, value, fp, None, False)
    keep = _Keep(keeper, key, how, site)
    keep.epoch = t.epoch
    keep.count = t.counts[site]
    frame = _project_frame()
    if t.frame_held != threading.get_ident() and _memory_type(type(value)) and sites.hold_test_frame(frame):
        # The test's names may hold the keeper until its end check (``k = Keeper(); k.collect(ds)``:
        # k.items is judged after the test returned, as a handover's holder is). For a kept array,
        # tensor or memoryview only, whose bytes change by a write alone: a kept dict also changes
        # when the test reads it (a defaultdict's missing key, jsonpickle's suite), which no mark sees.
        t.frame_held = threading.get_ident()
    keep.giver = _giver(site, value, frame)
    keep.producer = producer
    keep.code = id(frame.f_code) if frame is not None else 0
    keep.memory = memory
    if view and not _test.foreign and _foreign_memory(value):
        _test.foreign = True  # from now on the project's writes into arrays are told by memory too
    rec.adopter = keep
    if keeper is None and _weak(type(value)):
        # A name in a function other than the test's: judged only at the next binding at this line,
        # and only if someone still holds the value then. Held weakly, so that it dies when the program
        # lets go of it: a view kept alive past the program's close of its memory (an mmap, a shared-
        # memory block) would be read after the unmap. Not among the test's records (nothing to judge
        # at teardown: the frame is gone).
        rec.keeper, rec.obj = weakref.ref(value), None
    else:
        if how == "name" and _weak(type(value)):
            # The test's own name (or a module's): judged at the test's end while the name holds it, and
            # held weakly till then, so that it dies when the program lets go of it (a del, a binding).
            rec.keeper, rec.obj = weakref.ref(value), None
        elif how == "attr" and type(keep.ref) is weakref.ref:
            # An attribute: judged only while its object still holds it (rule Kept), so it is found
            # again through that object, and dies with it (``self.items = [lib.Item()]``).
            rec.keeper, rec.obj = _ThroughAttribute(keep.ref, key, value), None
        elif how == "item" and _memory_type(type(value)) and _weak(type(value)):
            # An array, tensor or memoryview kept as an item: held weakly, so that it dies when its keeper
            # lets go of it (``keep.clear()``) and its memory's owner can be resized again, as plain.
            rec.keeper, rec.obj = weakref.ref(value), None
        t.records.append(rec)
    if _memory_type(type(value)) and (span := _address(value)):
        was, count = t.memory_keeps.get(site, (None, 0))
        t.memory_keeps[site] = (span, count + 1 if was == span else 1)
    watched = _watch(value)
    if producer is not None:  # whose writes these are decides (rule who wrote it, for whom)
        t.produced.update(watched)
    if keep.strong:
        t.holds[id(keeper)] = t.holds.get(id(keeper), 0) + 1
    t.last[site] = rec  # not counted as a handover: the summary's counts are the state protocols' and channels'


# The bytes of fingerprints one keep site may take in a test before it is sampled: a line that keeps a
# new large value at each turn (lark's Earley forest visitor moves each node's growing list of children
# into its parent's) would otherwise be fingerprinted in full at every keep and judged again at the next,
# O(n) Python work per keep for n keeps. Past the budget the site records and judges a new object at
# its 2**k-th keep only: O(log n) fingerprints; a history of one object (the same object kept again) and
# what the site recorded last are judged as ever, and a finding at the site ends its sampling.
SITE_BUDGET = 1 << 20


def _spend(t: _Test, site: int, fp: Fingerprint) -> None:
    detail = fp.detail
    t.spent[site] = t.spent.get(site, 0) + (len(detail) if detail is not None else 0)


def _sampled_out(t: _Test, site: int, count: int) -> bool:
    """The *count*-th keep at a site past its budget, not a 2**k-th one, the site not flagged: a new
    object kept then is not recorded, and a record made then is not fingerprinted again."""
    return count & (count - 1) != 0 and t.spent.get(site, 0) > SITE_BUDGET and site not in t.flagged


def _unsampled(rec: Record) -> bool:
    """A record made at a keep :func:`_sampled_out` now passes over: not judged again (at the next keep
    and at teardown alike). The same object kept again at its line (a history of one object) is."""
    keep = rec.adopter
    return type(keep) is _Keep and _test.again is None and _sampled_out(_test, keep.site, keep.count)


def _project_frame() -> Any:
    """The marked statement's frame: the first one outside this module."""
    frame: Any = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame


def _giver(site: int, value: Any, frame: Any) -> str:
    """What handed *value* to the project: the library code that called the project's function with
    it (a hook, a callback), or the call the kept expression made. Told from the kept expression's
    text and the frame's code: the frame's locals are never read (a locals snapshot would keep
    them alive)."""
    try:
        code = frame.f_code
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        caller = frame.f_back
        text = _extras.get(site)
        expr = text[0] if isinstance(text, tuple) else ""
        root = expr.split(".", 1)[0].split("[", 1)[0]
        passed = root in names
        if caller is not None and passed and not _in_project(caller.f_code.co_filename):
            module = caller.f_globals.get("__name__", "?")
            name = getattr(caller.f_code, "co_qualname", caller.f_code.co_name).partition(".<locals>")[0]
            what = f" {expr}" if root in names and expr != root else ""
            return f"{module}.{name} (callback argument{what})"
    except Exception:
        pass
    text = _extras.get(site)
    if isinstance(text, tuple):
        return text[1]
    return text if isinstance(text, str) else ""


def _scalar(value: Any) -> bool:
    """An atom, or a numpy/torch scalar (``a[1]`` of an array): nothing to keep alive."""
    kind = type(value)
    if kind in mutability.ATOMS or issubclass(kind, (int, float, complex, str, bytes)):
        return True
    return kind.__module__ == "numpy" and getattr(value, "ndim", None) == 0


def _fresh(value: Any) -> bool:
    KEPT_WIDTH, fresh = probe.KEPT_WIDTH, probe.fresh

    try:
        return fresh(value, width=KEPT_WIDTH)
    except Exception:
        return False


OWN_WIDTH = QUIET_WIDTH  # a container with more items is looked at as before (fresh, fingerprinted)


def _own_parts(value: Any, depth: int = 2) -> bool:
    """A short dict, list or tuple of atoms and the project's own objects (``self._keys = [self]``, a
    parser's list of its own nodes, a packrat cache's ``(loc, results, loc)``), or of such containers
    *depth* levels down (a results object's ``{name: [its own items]}``): the project's structure, no
    library's live object in it. Exact types only, read at C level; a buffer is never the project's own
    here. The own types met are learnt for the marked code (:data:`OWN`)."""
    own: list[type] = []
    if not _own_items(value, depth, own):
        return False
    OWN.update(kind for kind in own if gate._hashed_as_type(kind))
    return True


def _own_items(value: Any, depth: int, own: list[type]) -> bool:
    if len(value) > OWN_WIDTH:
        return False
    items = value.values() if type(value) is dict else value
    if ONLY_ATOMS(map(type, items)):  # the common case, at C speed
        return True
    last: Any = None
    for item in items:
        kind = type(item)  # never hashed here: a metaclass's __hash__ is the program's code
        if kind is last or id(kind) in _ATOM_IDS:
            continue
        if kind is tuple or kind is list or kind is dict:  # by identity: a metaclass's __eq__ is the program's
            if not depth or not _own_items(item, depth - 1, own):
                return False
            continue
        if kind is types.MethodType or kind is types.FunctionType:
            # A project object's bound method, a function of the project's code (a parser's dispatch
            # table ``{name: getattr(self, "parse_" + name)}``): the project's own, read at C level.
            if not _own_callable(item):
                return False
            continue
        if _buffer_type(kind) or not _project_type(kind):
            return False
        last = kind
        own.append(kind)
    return True


def _own_callable(item: Any) -> bool:
    if type(item) is types.MethodType:
        owner: Any = item.__self__
        return _project_type(owner if issubclass(type(owner), type) else type(owner)) and (
            type(item.__func__) is not types.FunctionType or _in_project(item.__func__.__code__.co_filename))
    return _in_project(item.__code__.co_filename)


_ATOM_IDS = frozenset(map(id, mutability.ATOMS))


def _data(value: Any) -> bool:
    return (issubclass(type(value), (dict, list)) or type(value) in mutability.CONTAINERS or mutability.is_buffer(value)
            or type(value) is memoryview)


def _span_here(view: memoryview) -> tuple[int, int] | None:
    """The pure-Python twin of ``_gate.buffer_span``: a writable view's span (ctypes maps only those)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(view)), view.nbytes
    except (TypeError, ValueError):  # read-only, released, or not contiguous
        return None


# (address, length) of a memoryview's memory, read at C level; None when it has no one span.
_span: Any = gate._compiled.buffer_span if gate.COMPILED else _span_here


def _memory_type(kind: type) -> bool:
    """An array, a tensor or a memoryview: compared by the memory it views."""
    return kind is memoryview or _buffer_type(kind)


def _view(value: Any) -> bool:
    """A new array or tensor over memory it does not own (``t.numpy()``, ``np.frombuffer``, ``a[:]``),
    or a memoryview of memory that can change (a bytearray's, an array's, an mmap's; not bytes')."""
    if type(value) is memoryview:
        return _span(value) is not None and type(value.obj) is not bytes
    if not _buffer_type(type(value)):
        return False
    try:
        if type(value).__module__.startswith("numpy"):
            return value.base is not None
        if value._base is not None:
            return True
        torch = sys.modules["torch"]  # a tensor's: loaded
        # The storage object made here counts once: more than two users is another tensor's memory.
        # Not resizable: memory torch did not allocate (torch.from_numpy, torch.as_tensor of an array,
        # torch.frombuffer: a DataLoader's item with no batching), its owner's.
        storage = value.untyped_storage()
        return torch._C._storage_Use_Count(storage._cdata) > 2 or not storage.resizable()
    except Exception:
        return False


def _type_name(value: Any) -> str:
    kind = type(value)
    return f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__qualname__


# -- judging -------------------------------------------------------------------------


def _held(rec: Record) -> bool:
    """Whether the keeper still holds the value where it was kept, and is itself still held by
    someone besides these records (a dead function's local list holds nothing any more)."""
    keep: _Keep = rec.adopter
    value = rec.obj
    if type(keep.ref) is _ById and sys.getrefcount(value) <= 3:
        return False  # the record, this frame's name and getrefcount's argument: nobody else, no heap scan
    keeper = keep.find(value)
    if keeper is None:
        return False  # the keeper is gone, or no longer refers to the value
    # getrefcount's argument, this frame's name, and each record's strong reference.
    if keep.how in ("item", "attr") and sys.getrefcount(keeper) - 2 - _test.holds.get(id(keeper), 0) <= 0:
        return False
    try:
        if keep.how == "attr":
            return rules.attribute(keeper, keep.key) is value
        if keep.how == "name":
            space = keeper if type(keeper) is dict else keeper.f_locals  # a finished test frame's
            return space.get(keep.key) is value
        return any(part is value for part in _items(keeper))
    except Exception:
        return False


def _held_again(rec: Record) -> bool:
    """Whether the keeper (a list, dict or deque) holds the kept value at two places or more now: the
    same object kept again at one line, its earlier slots still there (a history of one object).
    Counted by identity at C speed, over the keeper's exact type only (no ``__iter__`` of the program's)."""
    keep: _Keep = rec.adopter
    keeper = _test.again
    if keeper is None or not _refers_to(keep.ref, keeper):
        keeper = keep.find(rec.obj)  # another keeper than this keep's (one heap scan)
    kind = type(keeper)
    if kind not in _HISTORIES:
        return False
    items = keeper.values() if kind is dict else keeper
    if sum(map(operator.is_, items, itertools.repeat(rec.obj))) >= 2:
        return True
    span = _address(rec.obj) if mutability.is_buffer(rec.obj) else None
    if not span or not span[0]:
        return False
    # Views of one memory at two places or more: the keeper's newest items, where a history's last
    # keeps are (its length is the program's; at most _MEMORY_TAIL items are looked at).
    tail = itertools.islice(reversed(items), _MEMORY_TAIL)  # type: ignore[call-overload]
    return sum(1 for v in tail if mutability.is_buffer(v) and _address(v) == span) >= 2


_HISTORIES = (list, dict, collections.deque)
_MEMORY_TAIL = 64


def _same_parts(old: Any, new: Any) -> bool:
    """Two lists, tuples or dicts (by their values) sharing an object that is not an atom, among
    their first _MEMORY_TAIL items: identity only, at C speed."""
    def parts(x: Any) -> Any:
        kind = type(x)
        if kind is dict:
            return itertools.islice(x.values(), _MEMORY_TAIL)
        return itertools.islice(x, _MEMORY_TAIL) if kind in (list, tuple) else ()

    ids = {id(p) for p in parts(old) if type(p) not in mutability.ATOMS}
    return bool(ids) and any(id(p) in ids for p in parts(new))


def _one_memory(old: Any, new: Any) -> bool:
    """Two arrays, tensors or memoryviews over exactly the same memory (its start and its length)."""
    if not (_memory_type(type(new)) and _memory_type(type(old))):
        return False
    span = _address(new)
    return bool(span and span[0]) and span == _address(old)


def _refers_to(ref: Any, obj: Any) -> bool:
    """Whether a keep's reference (:func:`_reference`) is to *obj*, alive in the caller's hands."""
    if type(ref) is _ById:
        return ref.id == id(obj) and ref.type is type(obj)
    return ref() is obj








def _items(keeper: Any) -> list[Any]:
    """What a keeper holds, read at C level (its type's own ``values``/iteration is never called)."""
    kind = type(keeper)
    if issubclass(kind, dict):
        return list(dict.values(keeper))
    if issubclass(kind, list):
        return list(list.__iter__(keeper))
    if issubclass(kind, collections.deque):
        return list(collections.deque.__iter__(keeper))
    return gc.get_referents(keeper)


def _changed(rec: Record) -> Fingerprint | None:
    """A kept value's fingerprint now, if it differs from the one at the keep (None: the same, or
    either cannot be read back: never an error in the test)."""
    if _unsampled(rec):
        return None
    try:
        now = fingerprint(rec.obj)
    except Exception:  # RecursionError included
        return None
    if type(rec.adopter) is _Keep:
        _spend(_test, rec.adopter.site, now)
    _test.fresh = (rec, now)  # the value now, for a keep that refreshes this record next (_keep)
    if now.digest == rec.fp.digest or not now.verifiable or not rec.fp.verifiable:
        return None
    return now  # maybe equal still (a dict's order): the diff decides, for a finding only


def _changes(rec: Record, now: Fingerprint) -> list[Change]:
    """What changed in a kept value from its fingerprint at the keep to *now* (a reduction through a
    bound method, a ring deeper than the walk: none to report, never an error in the test)."""
    try:
        if not diff(rec.fp, now):
            return []  # equal values, told apart only by order or identity of equal atoms
        changes = diff(rec.fp, now, collapse=True, reads=True) or [Change("", "?", "?")]
    except Exception:  # RecursionError included
        return []
    return [c for c in changes if not rules.materialised(rec.obj, c, now)]






def _by_project(rec: Record, epoch: int) -> bool:
    """The project itself wrote into the kept value after it was kept: its intent, not a finding.

    Not the generator that yielded it (rule *Who wrote it, for whom*): its write after the keep is
    its own intent for its own buffer; for the keeper, which holds it at the state it was yielded
    in, it is a change (a reused buffer: every kept item is the last one)."""
    written = _test.written
    if not written:
        return False
    producer = rec.adopter.producer if type(rec.adopter) is _Keep else None
    writers = _test.writers
    reachable = probe.reachable

    try:
        parts = [rec.obj, *reachable(rec.obj, depth=4)]
    except Exception:
        parts = [rec.obj]
    keep = rec.adopter if type(rec.adopter) is _Keep else None
    if any(written.get(id(p), -1) >= epoch and (producer is None or writers.get(id(p)) != producer)
           and not _another_receivers_write(p, keep) for p in parts):
        return True
    # The objects those containers hold (an index's keys and values, ``{child: parent}`` of a tree's
    # elements): the fingerprint reads into them, so the project's write into one changed the value.
    # Asked only of a changed value, at C speed.
    try:
        held = gc.get_referents(*[p for p in parts if type(p) in _PLAIN_OR_TUPLE])
    except Exception:
        held = []
    if any(written.get(id(p), -1) >= epoch and (producer is None or writers.get(id(p)) != producer)
           and not _another_receivers_write(p, keep) for p in held if type(p) not in mutability.ATOMS):
        return True
    return bool(_test.written_memory) and _written_through_memory(rec, epoch)


def _another_receivers_write(part: Any, keep: _Keep | None) -> bool:
    """*part* is one message object several receivers took, the keeping thread among them, and its last
    write was another receiver's: that receiver's intent for itself, a change for this keeper."""
    receivers = _test.receivers.get(id(part)) if _test.receivers else None
    if not receivers or keep is None or keep.actor not in receivers:
        return False
    writer = _test.receiver_writes.get(id(part))
    return writer is not None and writer != keep.actor and writer in receivers


_serials = threading.local()  # .n: this thread's number (_actor)
_task_serials: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()  # an asyncio task's
_next_serial = itertools.count(1)


def _actor() -> int:
    """Who runs now, as a number never another's: the asyncio task, else the thread (an id or an ident
    is reused once its task or thread ended)."""
    asyncio = sys.modules.get("asyncio")  # never imported here
    if asyncio is not None and asyncio._get_running_loop() is not None:
        task = asyncio.current_task()
        if task is not None:
            n = _task_serials.get(task)
            if n is None:
                _task_serials[task] = n = next(_next_serial)
            return n
    try:
        return _serials.n  # type: ignore[no-any-return]
    except AttributeError:
        _serials.n = n = next(_next_serial)
        return n


def _receiver_wrote(t: _Test, message: Any) -> None:
    """A receiver wrote into one message object several receivers took: for another receiver that kept
    it, a change, judged now while its keeper holds it (the writer's intent is for itself)."""
    writer = _actor()
    t.receiver_writes[id(message)] = writer
    receivers = t.receivers[id(message)]
    for rec in [r for r in t.records if r.obj is message and r.kind == "kept" and type(r.adopter) is _Keep
                and r.adopter.actor != writer and r.adopter.actor in receivers]:
        _judge_one(rec, RECEIVER_WRITE)


TAKEN_PARTS = 64  # the containers watched in one taken message
TAKEN_MOST = 1 << 12  # the containers watched for late serialisation in one test


def taken(part: Any) -> bool:
    """A worker took *part* (a dict or list, or a message holding it) off a queue: from now on the
    project's writes into it and into the containers in it are told with who wrote them, for a
    serialisation later (:func:`written_by_another`). Whether the boundary is on to tell them. Never
    raises; nothing is held."""
    t = _test
    if not _on or len(t.taken) >= TAKEN_MOST:  # a test streaming many messages: the first ones only
        return False
    try:
        ids = [id(part), *(id(p) for p in probe.reachable(part, depth=2)[:TAKEN_PARTS]
                           if type(p) in (dict, list))]
    except Exception:
        ids = [id(part)]
    who = _actor()
    for key in ids:
        t.taken[key] = who
        t.taken_writes.pop(key, None)  # a new object at a reused id: no write of it yet
        t.taken_threads.pop(key, None)
    _gates.watch(ids)
    return True


def written_by_another(part: Any) -> bool:
    """Another task or thread than the one that took *part* wrote into it (or into a container in it)
    since (:func:`taken`)."""
    t = _test
    who = t.taken.get(id(part))
    if who is None:
        return False
    try:
        ids = [id(part), *(id(p) for p in probe.reachable(part, depth=2)[:TAKEN_PARTS])]
    except Exception:
        ids = [id(part)]
    return any((w := t.taken_writes.get(key)) is not None and w != who for key in ids)


def written_by(part: Any, thread: threading.Thread) -> bool:
    """*thread* made the last write into *part* (or into a container in it) since a receiver took it
    (:func:`taken`): a call's argument its sender changed again after sending it once more (``cfg["w"] =
    w; ex.submit(score, cfg)`` in a loop), not a worker's write into state it shares on purpose."""
    t = _test
    if id(part) not in t.taken or not t.taken_threads:
        return False
    try:
        ids = [id(part), *(id(p) for p in probe.reachable(part, depth=2)[:TAKEN_PARTS])]
    except Exception:
        ids = [id(part)]
    return any(t.taken_threads.get(key) == thread.ident for key in ids)


def shared_receipt(message: Any) -> None:
    """This thread took *message*, one object sent to several receivers (the messages adapter). Never
    raises; the object is not held."""
    t = _test
    if _on:
        t.receivers.setdefault(id(message), set()).add(_actor())
        _gates.watch((id(message),))  # its keeps and the project's writes into it are told from now on


def _written_through_memory(rec: Record, epoch: int) -> bool:
    """The keeper's own function wrote into the kept tensor's memory through another object (``t =
    torch.from_numpy(a)`` kept, then ``a[:] = 1``): its intent. Another function's write (a dataset's
    ``__getitem__`` refilling the array a loader's item views) is a change for the keeper."""
    keep = rec.adopter
    if type(keep) is not _Keep or not mutability.is_buffer(rec.obj):
        return False
    span = _address(rec.obj)
    if span is None:
        return False
    start, size = span
    return any(at >= epoch and code == keep.code and s < start + size and start < s + n
               for (s, n), (at, code) in _test.written_memory.items())


def _foreign_memory(value: Any) -> bool:
    """A tensor over memory torch did not allocate (``torch.from_numpy``, ``torch.as_tensor`` of an array)."""
    try:
        return type(value).__module__.startswith("torch") and not value.untyped_storage().resizable()
    except Exception:
        return False


def _holds_foreign_memory(value: Any) -> bool:
    """A dict or list (its first three levels, each of at most :data:`_MEMORY_WIDTH` references) holding
    an array or tensor over memory it does not own alone: shared memory another process writes (a
    ``torch.multiprocessing`` queue's tensors), an array's memory under a tensor."""
    _owned_buffer_types = probe._owned_buffer_types

    buffers = _owned_buffer_types()
    if not buffers:  # neither torch nor numpy imported: nothing can view memory
        return False
    level = [value]
    try:
        for _ in range(3):  # a state dict's tensors, a bucket's dict of slices: the first levels
            refs = gc.get_referents(*level)  # C level: no user method runs
            if len(refs) > _MEMORY_WIDTH:
                return False
            if any(map(_shared_memory, [part for part in refs if type(part) in buffers])):
                return True
            level = [part for part in refs if issubclass(type(part), (dict, list, tuple))]
            if not level:
                break
        return False
    except Exception:
        return False


_MEMORY_WIDTH = 1 << 13
_PLAIN_OR_TUPLE = (tuple, list, dict)
_VIEW_WIDTH = 8


def _holds_view(value: Any) -> bool:
    """A tuple, list or dict of at most :data:`_VIEW_WIDTH` items, one of them an array, a tensor or a
    memoryview over memory it does not own (:func:`_view`); read at C level, one level down."""
    if len(value) > _VIEW_WIDTH:
        return False
    items = value.values() if type(value) is dict else value
    return any(_memory_type(type(item)) and _view(item) for item in items)


def _shared_memory(buffer: Any) -> bool:
    """An array or tensor over memory it does not own alone (see :func:`_holds_foreign_memory`)."""
    try:
        if type(buffer).__module__.startswith("torch"):
            storage = buffer.untyped_storage()
            return storage.is_shared() or not storage.resizable()
        return buffer.base is not None  # an ndarray (exactly: the caller tests the type): a view
    except Exception:
        return False


def _judge_one(rec: Record, check: str, collect: Any = None) -> None:
    """Rule *Kept* (:func:`aliascheck.boundary.rules.kept`) on one record: what it finds is reported at the
    test's end. *collect*: asks whether a keeper still holds once garbage is collected (teardown)."""
    changes = rules.kept(rec, check, _test, collect)
    if changes:  # where it sits is read now, while its keeper is surely alive
        _test.pending.append((rec, changes, check, _position(rec)))


def _report(rec: Record, changes: list[Change], check: str, position: str) -> list[Any]:
    if _ledger is None:
        return []
    keep: _Keep = rec.adopter
    keeper_text, how = _sites[keep.site]
    paths = [Change(f"{position}{c.path}", c.before, c.after, c.kind, c.text) for c in changes]
    what = rec.owner_name.rpartition(".")[2]
    last = _test.seen.get(keep.site)
    same = last.repeat if last is not None and rec.obj is not None and last.holds(rec.obj) else 1
    memory = _same_memory_count(rec)
    kept_here = sum(1 for r in _test.records if r.kind == "kept" and r.adopter.site == keep.site)
    if same > 1:
        held = f"one live {what} {same} times"
    elif memory > 1:
        held = f"{memory} {what}s over one live memory"
    elif kept_here > 1 and keep.how != "name":
        held = f"{kept_here} live {what}s"
    else:
        held = f"a live {what}"
    if keep.giver == REFILLED_BY_KEEPER:
        held += f" ({REFILLED_BY_KEEPER})"
    elif keep.giver:
        held += f" (handed out by {keep.giver})"
    where = rec.where
    return _ledger.report("kept", paths, owner=rec.owner_name, label=keeper_text, check=check,
                          site=where.site, stack=where.stack, thread=rec.thread,
                          hint=_fix(keeper_text, how, rec.obj, _value_text(keep.site)), origin=_line(where),
                          shares=held)


def _value_text(site: int) -> str:
    text = _extras.get(site)
    return text[0] if isinstance(text, tuple) else text if isinstance(text, str) else ""


def _same_memory_count(rec: Record) -> int:
    """How many values kept at the record's line view the same memory as it (``np.frombuffer(buf)``)."""
    keep: _Keep = rec.adopter
    mine = _address(rec.obj) if _memory_type(type(rec.obj)) else None
    if not mine:
        return 1
    alive = sum(1 for r in _test.records if r.kind == "kept" and r.adopter.site == keep.site
                and _memory_type(type(one := _held_value(r))) and _address(one) == mine)
    span, count = _test.memory_keeps.get(keep.site, (None, 0))
    return max(alive, count if span == mine else 0)


def _held_value(rec: Record) -> Any:
    """A kept record's value: held, or (held weakly) while it is alive; None once it died."""
    if rec.obj is not None or rec.keeper is None:
        return rec.obj
    return rec.keeper()


def _position(rec: Record) -> str:
    keep: _Keep = rec.adopter
    keeper_text = _sites[keep.site][0]
    if keep.how == "name":
        return keeper_text
    if keep.how == "attr":
        return keeper_text
    keeper = keep.find(rec.obj)
    try:
        if type(keeper) is dict:
            for k, v in keeper.items():
                if v is rec.obj:
                    return f"{keeper_text.rpartition('[')[0] or keeper_text}[{k!r}]"
        elif type(keeper) in _SEQUENCES:
            for i, v in enumerate(keeper):
                if v is rec.obj:
                    return f"{keeper_text}[{i}]"
    except Exception:
        pass
    return keeper_text


def _fix(keeper: str, how: str, value: Any, text: Any) -> str:
    """The keep statement, keeping a copy: ``acts.append(output.detach().clone())``."""
    expr = text if isinstance(text, str) and text else "value"
    if type(value) is list and value and all(type(v).__module__.startswith("torch") for v in value[:8]):
        copied = f"[t.detach().clone() for t in {expr}]"
    elif type(value).__module__.startswith("torch"):
        copied = f"{expr}.detach().clone()"
    elif mutability.is_buffer(value):
        copied = f"{expr}.copy()"
    elif type(value) in (memoryview, bytearray):  # neither pickles (deepcopy): its bytes, copied
        copied = f"bytes({expr})"
    else:
        copied = f"copy.deepcopy({expr})"
    if how in ("append", "appendleft"):
        return f"keep a copy: {keeper}.{how}({copied})"
    if how == "insert":
        return f"keep a copy: {keeper}.insert(..., {copied})"
    return f"keep a copy: {keeper} = {copied}"


# -- a project state method's recording, inserted into its own body (aliascheck.boundary.rewrite) ---------

# Code objects of project methods whose inserted recording is on: discovery adds a protocol class's
# methods here in place of wrapping them (aliascheck.discovery.watch). Code -> how many sessions.
ACTIVE: dict[int, tuple[Any, int]] = sites.INSIDE  # id(code) -> (code, count)
MISSING = instrument.MISSING
# The ledger's nodes that adopted a loaded state (its ``adopters``, the same dict): a method's
# inserted look after each call (``if ADOPTING: after_call(self)``) costs a truth test otherwise.
ADOPTING: dict[int, Any] = {}


def activate(codes: list[Any]) -> Any:
    """Turn on the inserted recording of these methods' code; returns the undo (sessions nest)."""
    for code in codes:
        ACTIVE[id(code)] = (code, ACTIVE.get(id(code), (code, 0))[1] + 1)
    done: list[bool] = []

    def undo() -> None:
        if done:
            return
        done.append(True)
        for code in codes:
            left = ACTIVE.pop(id(code), (code, 1))[1] - 1
            if left:
                ACTIVE[id(code)] = (code, left)

    return undo


def follow(ledger: Any) -> None:
    """A forked child's own ledger takes the inherited one's place."""
    global _ledger, ADOPTING
    if _on:
        _ledger, ADOPTING = ledger, ledger.adopters
        _publish()


# Who is told of each class a marked module makes (aliascheck.discovery: its state protocol).
CLASS_HOOKS: list[Any] = []


def last_used(value: Any, name: str) -> None:
    """The test function will not read *name* again (the marked code calls this right after the
    statement that read it last: :meth:`aliascheck.boundary.rewrite.Marker._last_uses`): a handed-over
    snapshot it names is compared now, and no longer kept by that name."""
    if not _on or guard.busy() or _ledger is None:
        return
    frame = sys._getframe(1)
    if _test_frame(frame):
        _ledger.last_used(value, frame, name)
        if _test.records:
            _kept_last_used(value, frame, name)


def _kept_last_used(value: Any, frame: Any, name: str) -> None:
    """The test will not read *name* again: a value it keeps by that name (a view) is judged now, and then
    no longer kept by it (rule *Held*: a change after the test's last read is one nobody sees; ``w0 =
    model.weight.detach()`` read before training and never after)."""
    for rec in _test.records:
        keep = rec.adopter
        if (rec.kind == "kept" and keep.how == "name" and keep.key == name and keep.ref() is frame
                and _held_value(rec) is value):
            rec.obj = value  # held again while it is judged (and till it is reported, if it changed)
            _judge_one(rec, "last-use")
            if not rec.flagged:
                rec.obj, rec.keeper, rec.kind = None, None, "released"
            return


def made_class(cls: Any) -> None:
    """A ``class`` statement of a marked module ran (and its decorators): *cls* is what it bound."""
    if CLASS_HOOKS and issubclass(type(cls), type):
        CLASS_HOOKS[-1](cls)


def first(args: tuple[Any, ...]) -> Any:
    """A load's state when it takes ``*args``: the first, or MISSING."""
    return args[0] if args else MISSING


def state_enter() -> Any:
    if not ACTIVE or id(sys._getframe(1).f_code) not in ACTIVE:
        return None
    return instrument.state_enter()


def state_exit(token: Any, owner: Any, result: Any, raised: Any, kind: str) -> None:
    if token is not None:
        # The method's temporary and its pending return value, this parameter, the next call's and
        # the handover's: fresh states are told by the count.
        instrument.state_exit(token, owner, result, bool(raised), kind, refs=5)


def load_enter(node: Any, state: Any, kind: str) -> Any:
    if not ACTIVE or id(code := sys._getframe(1).f_code) not in ACTIVE:
        return None
    return instrument.load_enter(node, state, kind, code)


def load_exit(token: Any, node: Any, raised: Any) -> None:
    if token is not None:
        instrument.load_exit(token, node, bool(raised))


def after_call(node: Any) -> None:
    if id(node) in ADOPTING:
        instrument.after_call(node)


def own_references(obj: Any) -> int:
    """How many references to *obj* this module's bookkeeping holds (the last keep per site, the
    records of kept and handed values): what another rule subtracts from a reference count to tell
    the program's holders. A walk of the test's tables: asked only when a count is ambiguous."""
    t = _test
    found = sum(1 for last in t.seen.values() if last[2] and last[0] is obj)
    lasts = {id(rec) for rec in t.last.values()}
    found += sum(1 for rec in t.last.values() if rec.obj is obj)
    found += sum(1 for rec in t.records if rec.obj is obj and id(rec) not in lasts)
    return found + sum(1 for rec in t.handed.values() if rec.obj is obj)


def judge_all(check: str = "teardown") -> None:
    """Judge every record of the test still held (the test's end)."""
    if not _on:
        return
    collected: list[int] = []  # the generations collected this round: 1 (the young ones), then 2 (all)

    def collect(held: Any) -> bool:
        """Whether *held()* still holds once garbage is collected: a dead local list in a reference
        cycle keeps nothing. The young generations first (a test's own garbage is mostly there, ~1 ms),
        the whole heap (tens of ms in a large process) only if the keeper still holds then; each once
        per test. The verdict is the whole collection's either way."""
        for generation in (1, 2):
            if generation not in collected:
                collected.append(generation)
                gc.collect(generation)
                if not held():
                    return False
        return held()

    for rec in list(_test.records):
        if rec.kind == "kept" and not rec.flagged:
            if rec.obj is None and rec.keeper is not None:  # held weakly: judged only if still alive
                rec.obj = rec.keeper()
                if rec.obj is None:
                    continue
            _judge_one(rec, check, collect)
    pending, _test.pending = _test.pending, []
    for rec, changes, when, position in pending:
        _report(rec, changes, when, position)


def begin() -> None:
    """A test begins: the per-test state is new."""
    _reset()


def end() -> None:
    """The test's checks are done (:func:`judge_all` ran): nothing of it stays held, its frame (a name
    keeper) and its kept values included, so that its fixtures' teardown sees what the program let go of."""
    _reset()


def _reset() -> None:
    global _test
    _test = _Test()
    _publish()
    _gates.unwatch()
    SEEN.clear()
    QUIET.clear()
    CLEAN.clear()
    OWN.clear()
    _known_buffers()


# -- copies --------------------------------------------------------------------------


def _shared_parts(copy: Any, source: Any) -> list[tuple[str, Any]]:
    """(path in the copy, part) of the mutable parts the copy shares with its source, one level down."""
    try:
        if mutability.is_buffer(copy):  # an object array: its elements
            if getattr(copy, "dtype", None) is None or str(copy.dtype) != "object":
                return []
            items: Iterable[tuple[Any, Any]] = ((f"[{i}]", v) for i, v in enumerate(copy.ravel().tolist()))
            source_ids = {id(v) for v in source.ravel().tolist()}
        elif type(copy) is dict:
            items = ((f"[{k!r}]", v) for k, v in copy.items())
            source_ids = set(map(id, _items(source)))
        elif type(copy) is list:
            items = ((f"[{i}]", v) for i, v in enumerate(copy))
            source_ids = set(map(id, _items(source)))
        else:  # an instance: copy.copy of one is the caches adapter's (plugins/caches.py)
            return []
        out = []
        for path, value in items:
            if id(value) in source_ids and _data(value) and not mutability.immutable(value):
                out.append((path, value))
                if len(out) >= COPY_WIDTH:
                    break
        return out
    except Exception:
        return []


def _source_text(call: Any) -> str:
    """``cfg`` of ``cfg.copy()``, ``copy.copy(cfg)`` or ``np.copy(cfg)``."""
    text = call if isinstance(call, str) else ""
    if text.endswith(".copy()"):
        return text[:-len(".copy()")]
    if "(" in text and text.endswith(")"):
        return text[text.index("(") + 1:-1]
    return text or "..."


def _descendants(part: Any) -> list[Any]:
    out = [part]
    level = [part]
    while level and len(out) < COPY_WIDTH:
        nxt = []
        for obj in level:
            children = obj.values() if type(obj) is dict else obj if type(obj) is list else ()
            for child in children:
                if type(child) in (dict, list):
                    nxt.append(child)
        out += nxt
        level = nxt
    return out[:COPY_WIDTH]


def _copy_written(rec: Record, target: Any) -> None:
    """The project wrote into a part a copy shares with its source (rule *Copied*:
    :func:`aliascheck.boundary.rules.copied`)."""
    copy_ref, source_ref = rec.adopter
    copy = _above(copy_ref, target)
    source = _above(source_ref, target) if copy is not None else None
    if copy is None or source is None:
        # Not (or no longer) a part the two share: they died and the id is another object's now, or
        # it was taken out of one of them. Either way this record can judge no write into it.
        _test.shared.pop(id(target), None)
        return
    if _ledger is not None and (known := _ledger.records.get(id(copy))) is not None and known.obj is copy:
        # A state method's snapshot (``state = self.__dict__.copy(); return state`` in ``__getstate__``,
        # the pickle documentation's own idiom), alive because the ledger records it: the ledger's rules
        # judge it (handed over live, saved, loaded), not what the copy shares.
        return
    if not rules.copied(rec, _test.flagged, copy, source) or _ledger is None:
        return
    copy_name = rec.label
    path = _path_of(copy, target) or rec.adopted[0][0]
    change = Change(path, "shared with the source", "written through the copy")
    source = rec.shares[0][0] if rec.shares else "..."
    fix = f"make a deep copy: {copy_name} = copy.deepcopy({source})"
    _ledger.report("copied", [change], owner=rec.owner_name, label=copy_name, check="write",
                   site=rec.where.site, stack=rec.where.stack, thread=rec.thread, hint=fix, origin=_line(rec.where),
                   shares=f"written at {capture(3).site}")


def _above(ref: Any, part: Any, depth: int = 4) -> Any:
    """The object *ref* stands for, if it is alive: a weak reference's, or (known by id) found among
    the containers that refer to *part*, level by level up to *depth*."""
    if type(ref) is not _ById:
        return ref()
    level = [part]
    for _ in range(depth):
        ups = [r for r in gc.get_referrers(*level) if type(r) in (dict, list)]
        for up in ups:
            if id(up) == ref.id and type(up) is ref.type:
                return up
        level = ups[:COPY_WIDTH]
        if not level:
            break
    return None


def _path_of(root: Any, target: Any, depth: int = 4) -> str:
    level: list[tuple[str, Any]] = [("", root)]
    for _ in range(depth):
        nxt = []
        for path, obj in level:
            children: Iterable[tuple[str, Any]]
            if type(obj) is dict:
                children = ((f"{path}[{k!r}]", v) for k, v in obj.items())
            elif type(obj) is list:
                children = ((f"{path}[{i}]", v) for i, v in enumerate(obj))
            else:
                continue
            for p, v in children:
                if v is target:
                    return p
                nxt.append((p, v))
        level = nxt[:COPY_WIDTH]
    return ""


# -- what the project hands to a library that keeps it ------------------------------

# site -> the reference counts of its names' parts before the statement, the parts' ids (no reference
# is held during the call: a callee may count them, numpy's resize does), and the lengths of its exact dicts.
# Seeded: tracked by gc from the start.
_counts: dict[int, tuple[list[int], list[int], tuple[Any, ...], list[int]]] = {-1: ([], [], (), [])}
# site -> its one callee, when it is the project's own and nothing was handed out in this test: the
# marked code calls before() again only for another callee (a weak reference: it keeps nothing alive).
QUIET: dict[int, Any] = {}
CLEAN: set[int] = set()  # ids returned or yielded and not written since (the marked code's REFILLED: no)
# ids of the project's code objects seen calling a function that keeps its parameter: the gate makes
# such a parameter the site's last itself (:func:`_made`, aliascheck.gate.keep). Code lives on: never cleared.
CALLERS: set[int] = set()

PENDING = _counts  # the marked code calls after only for a site before recorded (PENDED)
UNPEND = _counts.pop  # and lets go of what before recorded when the statement ends, raised or not
HANDED_ITEMS = 64  # a list or dict argument: its own dicts and lists are looked at, this many at most


def _handed_parts(argsets: tuple[tuple[Any, ...], ...]) -> list[tuple[int, int, str, Any]]:
    """(call index, argument index, path, object) of what a call could keep: data, and a list's or
    dict's own lists and dicts (an optimizer keeps a param group's dicts, not the list). Exact types
    only, read at C level."""
    out = []
    for i, args in enumerate(argsets):
        for j, arg in enumerate(args):
            kind = type(arg)
            look = _PASSED.get(kind)
            if look is None:
                look = _PASSED[kind] = _passed_kind(kind)
            if not look:
                continue
            out.append((i, j, "", arg))
            # A list's or dict's own lists and dicts, when it has any (told at C speed: a list of
            # numbers costs no Python step per item).
            if look == 2 and arg and not _NESTING.isdisjoint(
                    map(type, itertools.islice(arg.values() if kind is dict else arg, HANDED_ITEMS))):
                items = arg.items() if kind is dict else enumerate(arg)
                for n, (k, v) in enumerate(items):
                    if n >= HANDED_ITEMS:
                        break
                    if type(v) in _NESTING:
                        out.append((i, j, f"[{k!r}]", v))
    return out


_NESTING = frozenset({list, dict})
# type -> 0: not what a call keeps as data; 1: data; 2: an exact list or dict, looked into
_PASSED: dict[type, int] = {mutability.Seed: 0}


def _passed_kind(kind: type) -> int:
    if kind in ATOMS or kind in mutability.FROZEN or (
            kind.__name__ == "Parameter" and kind.__module__.startswith("torch")) or not (  # see _parameter
            issubclass(kind, (dict, list)) or kind in mutability.CONTAINERS or mutability.buffer_type(kind)):
        UNPASSED.add(kind)  # never looked at by before: the marked code no longer calls for it
        return 0
    return 2 if kind in _NESTING else 1


# Types of values the marked code need not report, learnt as they are met (a type's answer never
# changes): a name bound to one (UNBOUND: :func:`bound`), or passed to a call (UNPASSED: :func:`before`).
UNBOUND: set[type] = {*ATOMS, tuple, frozenset}
# The project's own types met as a kept value (not arrays): a keep of one is the project's structure, so
# the marked code asks only whether the keeper is watched (:func:`aliascheck.gate.keep`). Per test.
OWN: set[type] = set()
UNPASSED: set[type] = {*ATOMS, tuple, frozenset}
BIND, PASSES, PENDED = _gates.bind, _gates.passes, _gates.pended


def _configure_gates() -> None:
    """Point both gates at this module's sets (at import, and at each start: a second import of this
    module, by a test of the program's or pytester's own, must not leave the gates reading its sets)."""
    for impl in {gate, _gates}:
        impl.configure(ATOMS, BUFFERS, WATCHED, FED, HELD, SEEN, _Last, QUIET_WIDTH, generator_loop)
        impl.configure_calls(UNBOUND, UNPASSED, QUIET, PENDING, OWN, CLEAN, CALLERS)


_configure_gates()


def _kept_by(func: Any, obj: Any) -> bool:
    """Whether a callee keeping *obj* is a library keeping it (see :func:`after`).

    A tensor given to a module's method (``register_buffer``, ``register_parameter``) becomes the
    module's live state, which the project updates on purpose: not looked at. A load through a
    state protocol is the ledger's handover (rule Loads)."""
    if not _library(func) or _callee_name(func) in _PROTOCOL or _attribute_store(func):
        return False
    return not (mutability.is_buffer(obj) and _module(_callee_parts(func)[0]))


_SLOTS = (types.WrapperDescriptorType, types.MethodWrapperType)


def _attribute_store(func: Any) -> bool:
    """``object.__setattr__(self, "_cache", cache)`` (a frozen dataclass's own ``__init__``),
    ``super().__setattr__(...)``: the attribute store itself, as the builtin ``setattr`` is, and no
    library keeping a record. Told by the callee's C type, then its C-level name."""
    return type(func) in _SLOTS and func.__name__ in ("__setattr__", "__setitem__")


# What schedules a later call when given among a call's arguments: the call keeps the other arguments
# for it (``stack.callback(report, stats)``, ``atexit.register(flush, buf)``, ``weakref.finalize(o,
# close, conn)``), and that call reads them live, as a direct call would: no record of the past.
_DEFERRED = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, functools.partial)


def _deferred_call(args: tuple[Any, ...], obj: Any) -> bool:
    return any(type(a) in _DEFERRED and a is not obj for a in args)


def before(site: int, argsets: tuple[tuple[Any, ...], ...], callees: tuple[Any, ...] = ()) -> None:
    """A statement passing names to calls is about to run: count who refers to them (and judge a
    value an earlier library call kept, changed since, and passed again). Only plain names are
    given: reading them ran nothing of the program's. *callees*: each call's callee when it is a
    plain name, (a name's value, an attribute's name) for ``name.attr(...)``, else None; when all
    are known and none is a library's, nothing can be handed out."""
    if not _on or guard.busy():
        return
    told = callees
    given = callees = tuple(map(_owner, callees))  # ``name.a.b``: (name.a, "b"), read as the statement will
    if callees and not _test.handed:
        callees = tuple(map(_resolved, callees))
    # (``None in callees`` would compare each callee with None: a mock's ``__eq__`` runs and is recorded.)
    if callees and not _test.handed and not any(map(_library, callees)):
        _counts.pop(site, None)
        if len(callees) == 1 and _weak(type(callees[0])) and (type(told[0]) is not tuple or len(told[0]) == 2):
            # The marked code skips this call while it is the callee: a plain name's value, or for
            # ``owner.name(...)`` (a class's or a module's), while the owner's entry is still this one.
            one = given[0]
            if type(one) is not tuple:
                QUIET[site] = weakref.ref(callees[0])
            elif type(one[0]) is types.ModuleType or issubclass(type(one[0]), type):
                if _weak(type(one[0])):
                    QUIET[site] = (weakref.ref(one[0]), one[1], weakref.ref(callees[0]))
            else:  # an instance's method: while its class's entry is this function and no attribute hides it
                QUIET[site] = (weakref.ref(type(one[0])), one[1], weakref.ref(callees[0]), True)
        return
    parts = _handed_parts(argsets)
    if not parts:
        _counts.pop(site, None)
        return
    # Each ``name.attr`` callee as the statement is about to evaluate it: held from before the counts to
    # after them (a callee bound to a part counts the same both times), and let go at the statement's
    # end whatever happens (the marked code's ``UNPEND``).
    found = tuple((gate.callee_of(*callee) if callee[0] is not None else None) if type(callee) is tuple
                  else callee for callee in given)
    # The counts first: no name of this frame may refer to a part yet.
    _counts[site] = (_refcounts(parts), [id(part[3]) for part in parts], found, _sizes(parts))
    t = _test
    if t.handed:
        for _i, _j, _path, obj in parts:
            rec = t.handed.get(id(obj))
            # A buffer is refilled and passed again by design (readinto(buf)); a config or a param
            # group is not: the library's edits of it reach the next call.
            if rec is not None and rec.obj is obj and not rec.flagged and type(obj) in (dict, list):
                _passed_again(rec, None)


def _owner(callee: Any) -> Any:
    """``(name's value, "a", "b")`` of a callee ``name.a.b``: (the value of ``name.a``, "b"), found as the
    statement is about to find it (:func:`aliascheck.gate.callee_of`); (None, "b") when that cannot be told
    without running the program's code. A plain value, or (owner, name), as it is."""
    if type(callee) is not tuple or len(callee) == 2:
        return callee
    owner = callee[0]
    for name in callee[1:-1]:
        if owner is None:
            break
        owner = gate.callee_of(owner, name)
    return (owner, callee[-1])


def _resolved(callee: Any) -> Any:
    """A callee as before() is told it: ``(module, name)`` is the module's function, read from the
    module's dict (a module's ``__getattr__`` runs only for a name its dict lacks: then unknown)."""
    if type(callee) is not tuple:
        return callee
    owner, name = callee
    if type(owner) is types.ModuleType:
        return vars(owner).get(name)
    if issubclass(type(owner), type):  # ``Node.from_sorted(xs)``: the class's own entry, no descriptor run
        for base in _MRO(owner):
            found = _CLASS_DICT(base).get(name)
            if found is not None:
                return found.__func__ if type(found) in (classmethod, staticmethod) else found
        return None
    return gate.instance_method(owner, name)  # ``state.append_token(t)``: the function it binds, or None


_MRO, _CLASS_DICT = rules.MRO, rules.CLASS_DICT  # read as type itself reads them


def _refcounts(parts: list[tuple[int, int, str, Any]]) -> list[int]:
    return [sys.getrefcount(part[3]) for part in parts]


def _sizes(parts: list[tuple[int, int, str, Any]]) -> list[int]:
    """The length of each exact dict among *parts* (-1 for the others), read at C level."""
    return [len(part[3]) if type(part[3]) is dict else -1 for part in parts]


def after(site: int, calls: tuple[tuple[Any, tuple[Any, ...]], ...], result: Any = None) -> None:
    """The statement ran: a name a library call now refers to more than before was kept by it.
    *calls*: (the callee as the statement evaluated it, the names it passed) per call."""
    if not _on or guard.busy():
        return
    pending = _counts.pop(site, None)
    if pending is None:
        return
    counts, ids, found, sizes = pending
    # The names as they are now. A name the statement bound again (``x = lib.f(x)``) holds another
    # object: the parts then differ from those counted before, and nothing is judged (the objects
    # counted were alive through the call, so an id the same is the same object).
    parts = _handed_parts(tuple(args for _func, args in calls))
    if len(parts) != len(counts) or any(id(part[3]) != was for part, was in zip(parts, ids, strict=True)):
        return
    now = _refcounts(parts)
    for part, was, count, size in zip(parts, counts, now, sizes, strict=True):
        i, j, path, obj = part
        # The callee as the statement caught it, else as before() found it (``name.attr``): when neither
        # can say (a property on the way), nothing is judged.
        func = calls[i][0] if calls[i][0] is not None else found[i] if i < len(found) else None
        if (func is not None and count > was and not _explained(result, obj) and _kept_by(func, obj)
                and not _deferred_call(calls[i][1], obj) and _captured_by_harness(obj) < count - was):
            # The call that kept a dict wrote keys into it (an optimizer's param group filled with its
            # defaults): the library took it as its own live settings, not as a record of the past.
            _handed(obj, func, site, i, j, path, was, count - was, filled=size >= 0 and len(obj) != size)


_HARNESS_TAIL = 8  # the records a capture list gained in one call looked at, from its end


def _captured_by_harness(obj: Any) -> int:
    """References to *obj* from log records that only pytest's own log capture holds (its handlers'
    ``records`` lists, on the root logger while a test runs): the test harness keeping a record of
    a logging call, not the program (a ``MemoryHandler`` of the program's holding the same record
    makes it the program's). Only the lists' last few records are looked at: those the call made."""
    logging = sys.modules.get("logging")
    if logging is None:
        return 0
    lists = []
    for handler in list(getattr(logging.getLogger(), "handlers", ())):
        records = vars(handler).get("records") if type(handler).__module__ == "_pytest.logging" else None
        if type(records) is list:
            lists.append(records)
    if not lists:
        return 0
    # A call's record is appended once to each capture list: the tails alone tell which lists hold it.
    tails: dict[int, Any] = {}
    holders: dict[int, int] = {}
    for records in lists:
        for record in records[-_HARNESS_TAIL:]:
            tails[id(record)] = record
            holders[id(record)] = holders.get(id(record), 0) + 1
    found = 0
    for record in tails.values():
        if not issubclass(type(record), logging.LogRecord):
            continue
        fields = vars(record)
        args = fields.get("args")
        refs = (fields.get("msg") is obj) + (args is obj)
        if type(args) is tuple:
            refs += sum(1 for arg in args if arg is obj)
        if not refs:
            continue
        # The capture lists, the tails dict, this loop's name, getrefcount's argument: nobody else.
        if sys.getrefcount(record) - 3 <= holders[id(record)]:
            found += refs
    return found


def _handed(obj: Any, func: Any, site: int, call: int, arg: int, path: str, was: int, gained: int,
            filled: bool = False) -> None:
    t = _test
    if id(obj) in t.handed and t.handed[id(obj)].obj is obj:
        return
    if _ledger is not None and _ledger.recorded(obj):
        return  # one record per handover: the ledger's (a snapshot, a load) judges it
    calls = _extras.get(site) or []
    text, names = calls[call] if call < len(calls) else ("?", [])
    name = names[arg] if arg < len(names) else f"argument {arg + 1}"
    rec = Record(_callee(func, text), f"{name}{path}", "handed", capture(3),
                 threading.current_thread().name, _ledger.test if _ledger is not None else None, obj,
                 fingerprint(obj), None, False)
    rec.adopter = (was, gained, t.epoch, filled)
    t.handed[id(obj)] = rec
    QUIET.clear()  # a value handed out: before() looks at every call again (a value passed again)
    t.records.append(rec)
    _watch(obj)


def _explained(result: Any, obj: Any) -> bool:
    """The statement bound the object, or something that refers to it (a view, a proxy, an iterator)."""
    if result is None:
        return False
    if result is obj or issubclass(type(result), _LIVE_VIEWS) or _same_memory(result, obj):
        return True
    try:  # one step: a view's base, a proxy's mapping, an iterator's sequence (not an object's attributes' parts)
        return any(r is obj for r in gc.get_referents(result)) or _based_on(result, obj)
    except Exception:
        return False


def _based_on(result: Any, obj: Any) -> bool:
    """An array made over *obj*'s memory (``np.frombuffer(block)``): numpy arrays show the garbage
    collector no referents, so their ``base`` chain is followed, through a memoryview to what it exports."""
    np = sys.modules.get("numpy")
    if np is None or not isinstance(result, np.ndarray):
        return False
    base = result.base
    for _ in range(8):
        if base is obj:
            return True
        if type(base) is memoryview:
            try:
                return base.obj is obj
            except ValueError:  # released
                return False
        if not isinstance(base, np.ndarray):  # an array's base only: never a user object's attribute
            return False
        base = base.base
    return False


def _address(buffer: Any) -> tuple[int, int] | None:
    if type(buffer) is memoryview:
        return _span(buffer)
    try:
        if type(buffer).__module__.startswith("torch"):
            return buffer.data_ptr(), buffer.untyped_storage().nbytes()
        if hasattr(buffer, "__array_interface__"):
            return buffer.__array_interface__["data"][0], buffer.nbytes
    except Exception:
        return None
    return None


def _same_memory(result: Any, obj: Any) -> bool:
    """*result* is an array or tensor over *obj*'s memory (``torch.from_numpy(a)``, ``np.asarray(t)``)."""
    if not (mutability.is_buffer(result) and mutability.is_buffer(obj)):
        return False
    a, b = _address(result), _address(obj)
    if not a or not b or not a[0] or not b[0]:
        return False
    return a[0] < b[0] + max(b[1], 1) and b[0] < a[0] + max(a[1], 1)


# Objects that are live views of what they are given, by their documentation.
_LIVE_VIEWS = (types.MappingProxyType, collections.ChainMap, memoryview)


_PROTOCOL = frozenset(STATE_METHODS + LOAD_METHODS)
# Callees whose keeping is another adapter's to judge (messages: queues, executors, threads,
# processes) or is not keeping at all (a mock records every call's arguments).
# heapq and bisect keep nothing themselves: they place the item into the caller's own list.
_OTHERS = ("queue", "_queue", "multiprocessing", "concurrent.futures", "threading", "asyncio", "unittest.mock",
           "pickle", "_pickle", "copy", "functools", "heapq", "_heapq", "bisect", "_bisect",
           "_pytest", "pytest")  # the test harness: monkeypatch keeps what it set to undo it, no record
_others: dict[str, bool] = {}


def _other(module: str) -> bool:
    """*module* is one of :data:`_OTHERS` or inside one (answered once per module name)."""
    known = _others.get(module)
    if known is None:
        known = _others[module] = any(module == m or module.startswith(m + ".") for m in _OTHERS)
    return known


def _library(func: Any) -> bool:
    """A callee outside the project: a library's function, class or a library object's method,
    and not one whose keeping another adapter judges. Read from the callee's type and C-level
    fields only: a callable object's own attributes are the program's code."""
    if func is None:
        return True
    owner, module, code = _callee_parts(func)
    if _other(module):
        return False
    if owner is not None:
        if type(owner) in mutability.CONTAINERS or type(owner) in (dict, list):
            return False  # the project's own container's method
        return not _project_type(owner if issubclass(type(owner), type) else type(owner))
    if issubclass(type(func), type):
        return not _project_type(func)
    if code is not None:
        return not _in_project(code.co_filename)
    return not _in_project(getattr(sys.modules.get(module), "__file__", "") or "")


def _callee_parts(func: Any) -> tuple[Any, str, Any]:
    """(the object a method is bound to, or None; the module; the code) of a callee, by its type."""
    kind = type(func)
    if kind is types.MethodType:
        owner = func.__self__
        if type(owner) is types.ModuleType:
            return None, owner.__name__, None
        return owner, type(owner).__module__ or "", None
    if kind is types.MethodWrapperType:  # a C slot bound to an object (``super().__init__`` of an Exception)
        owner = func.__self__
        return owner, type(owner).__module__ or "", None
    if kind is types.BuiltinFunctionType:
        owner = func.__self__
        if owner is None or type(owner) is types.ModuleType:
            return None, func.__module__ or (owner.__name__ if owner is not None else ""), None
        return owner, type(owner).__module__ or "", None
    if kind is types.FunctionType:
        return None, func.__module__ or "", func.__code__
    if issubclass(kind, type):
        return None, type.__dict__["__module__"].__get__(func) or "", None
    return None, kind.__module__ or "", None


def _project_type(kind: type) -> bool:
    module = sys.modules.get(kind.__module__)
    return _in_project(getattr(module, "__file__", "") or "")


_project: Any = None


def _in_project(file: str) -> bool:
    known = _files.get(file)
    if known is None:
        known = _files[file] = bool(file) and _project is not None and bool(_project(file))
    return known


_files: dict[str, bool] = {}


def set_project(predicate: Any) -> None:
    global _project
    _project = predicate
    _publish()
    _files.clear()


def _module(owner: Any) -> bool:
    if owner is None:
        return False
    return any(k.__name__ == "Module" and k.__module__ == "torch.nn.modules.module" for k in type(owner).__mro__)


def _parameter(value: Any) -> bool:
    # A Parameter is the module's live state by design: an optimizer keeping it is its job.
    return type(value).__name__ == "Parameter" and type(value).__module__.startswith("torch")


def _callee_name(func: Any) -> str:
    kind = type(func)
    if kind is types.MethodType:
        func = func.__func__
        kind = type(func)
    if kind in (types.FunctionType, types.BuiltinFunctionType):
        return func.__name__
    return ""


def _callee(func: Any, text: str) -> str:
    name = _qualified(func, text)
    return text if "._" in name else name  # torch.from_numpy is a private class's method: the source says it better


def _qualified(func: Any, text: str) -> str:
    if func is None:
        return text
    owner, module, _code = _callee_parts(func)
    name = _callee_name(func) or text
    if owner is not None:
        kind = owner if issubclass(type(owner), type) else type(owner)
        return f"{kind.__module__}.{kind.__qualname__}.{name}"
    if issubclass(type(func), type):
        return f"{module}.{type.__dict__['__qualname__'].__get__(func)}"
    if type(func) is types.FunctionType:
        return f"{module}.{func.__qualname__}"
    return f"{module}.{name}" if module and name != text else text


def _still_held(rec: Record, obj: Any) -> bool:
    was, gained, _epoch, _filled = rec.adopter
    # This frame's argument and getrefcount's, as before() counted them with the tuple's and its own.
    return sys.getrefcount(obj) - 1 >= was - 1 + gained - 1


def _handed_written(rec: Record, target: Any, root: Any) -> None:
    """The project wrote into a value a library call kept (rule *Handed*: :func:`aliascheck.boundary.rules.handed`)."""
    # Not through the library's own handle (opt.param_groups[0]["lr"] = ...): its documented use. Nor
    # into a dict the library filled in as it kept it (``for g in opt.param_groups: g["lr"] = ...`` of the
    # groups the project built): the library's live settings, which the project sets on purpose.
    if rec.adopter[3] and rec.obj is target:
        return
    own = root is None or root is target or _project_owned(root)
    if not rules.handed(rec, _still_held(rec, target) and not rules.setting(target), own):
        return
    changes = _changes_of(rec)
    if _ledger is None:
        return
    where = capture(3)
    changes = _named(rec, changes or [Change("", "as handed over", "changed")])
    _ledger.report("handed", changes, owner=rec.owner_name,
                   label=rec.label, check="write", site=rec.where.site, stack=rec.where.stack, thread=rec.thread,
                   hint=_handed_fix(rec), origin=_line(rec.where), shares=f"the project changed it at {where.site}")




def _passed_again(rec: Record, func: Any) -> None:
    """A value an earlier library call kept is passed to a call again, changed since by that library
    (rule *Handed*: :func:`aliascheck.boundary.rules.passed_again`)."""
    changes = _changes_of(rec)
    if not rules.passed_again(rec, changes, _test) or _ledger is None:
        return
    where = capture(3)
    changes = _named(rec, changes)
    _ledger.report("handed", changes, owner=rec.owner_name, label=rec.label, check="pass", site=rec.where.site,
                   stack=rec.where.stack, thread=rec.thread, origin=_line(rec.where),
                   hint=f"pass a fresh {_type_name(rec.obj)} to each call (build {rec.label} anew), not one a "
                        f"library kept and changed",
                   shares=f"{rec.owner_name.rpartition('.')[2]} changed it, and it was passed again at {where.site}")


def _named(rec: Record, changes: list[Change]) -> list[Change]:
    """Paths from the project's name for the value: ``buf``, ``groups[0]['lr']``."""
    return [Change(f"{rec.label}{c.path}", c.before, c.after, c.kind, c.text) for c in changes]


def _handed_fix(rec: Record) -> str:
    name = rec.label
    if type(rec.obj).__module__.startswith("torch"):
        copied = f"{name}.clone()"
    elif mutability.is_buffer(rec.obj):
        copied = f"{name}.copy()"
    elif type(rec.obj) is dict:
        copied = f"dict({name})" if mutability.immutable(tuple(rec.obj.values())) else f"copy.deepcopy({name})"
    else:
        copied = f"copy.deepcopy({name})"
    return f"pass a copy ({copied}) to {rec.owner_name.rpartition('.')[2]}, or do not change {name} while it keeps it"


def _changes_of(rec: Record) -> list[Change]:
    """The changes of a value a library kept, less those of module parameters inside it (live by design)."""
    now = _changed(rec)
    changes = _changes(rec, now) if now is not None else []
    return [c for c in changes if not _parameter(rules.at_path(rec.obj, c.path))]


def _project_owned(root: Any) -> bool:
    kind = type(root)
    return kind in mutability.CONTAINERS or kind in (dict, list) or mutability.is_buffer(root) or _project_type(kind)


def _line(where: Any) -> str:
    """``file:line in function`` of the project's line (a report's "let out" line and its bug's key)."""
    stack = where.stack
    return stack[0] if stack else where.site


# -- the portal ----------------------------------------------------------------------------
# What marked code reads (``@aliascheck.loop``, ``@aliascheck._on``, a template's ``BIND``), through the
# one builtins name (aliascheck.boundary.rewrite.RUNTIME): a module of this module's functions, types
# and constants, and the two tables read as flags, none of its other tables. A program that walks
# builtins' values (dill's ``__diff`` memorises every module's attributes, builtins' among them, and
# later tells whether any changed) meets names that do not change during a test, not this module's
# tables, which change at every marked statement. A module, not an object of aliascheck's own type:
# ``torch.compile`` traces marked code, and knows a module read from builtins.
portal = types.ModuleType(__name__ + ".portal", "What marked code reads of aliascheck.boundary.runtime.")
_FLAGS = frozenset({"ACTIVE", "ADOPTING", "MISSING"})


def _shown(name: str, value: Any) -> bool:
    return name in _FLAGS or (callable(value) and not isinstance(value, types.ModuleType)) or (
        type(value) in ATOMS and not name.startswith("__"))


def _publish() -> None:
    """The portal shows this module's current values (after a rebinding: a session's start and stop)."""
    vars(portal).update((name, value) for name, value in globals().items() if _shown(name, value))



_publish()
