"""The ledger's data: its settings, one record per handover, and its counters."""

from __future__ import annotations

import sys
import weakref
from collections import Counter
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .fingerprint import Fingerprint, fingerprint
from .sites import Where


@dataclass(frozen=True, slots=True)
class Settings:
    probe_aliases: bool = True
    ignore: tuple[str, ...] = ()
    strict: bool = False


class Record:
    """One handover: who gave and who keeps it, its value's fingerprint then, where (a raw capture),
    what may judge it (``always``: whoever holds it; ``adopter``/``adopted``: a node's load) and until
    when (``until``).

    The ledger's snapshots and the adapters' handovers alike: a message (``kind`` ``message``,
    ``call`` for a call's ``(args, kwargs)``, ``buffer``), a cache value (``cache-value``,
    ``cached-property``, ``copy``). An adapter makes its records with :func:`handed`, which sets
    only what every record has; the rest read as their defaults (:data:`DEFAULTS`) until set.
    """

    __slots__ = ("owner_name", "label", "kind", "where", "thread", "test", "obj", "fp", "owner", "owner_type",
                 "nested", "always", "flagged", "aliases", "shares", "adopter", "adopted", "adopted_parts",
                 "indexed", "live", "key", "keeper", "until", "flat", "plain", "exclude", "origin", "parts", "fed",
                 "synced", "ledger", "receivers", "taken", "handles", "sent")

    owner_name: str  # module.Qualname of the owner's type, a channel or cache name (or the name a watch gave)
    label: str  # a readable name for the owner instance, e.g. "MutableSource#2"
    kind: str  # state_dict, reset, load_state_dict, watch, ...; message, call, buffer; cache-value, ...
    where: Where  # formatted only when reported
    thread: Any  # the giver's thread: its name (the ledger), or the Thread itself (a message: its ident matters)
    test: str | None
    obj: Any  # what is compared: the value, or a call's (args, kwargs)
    # The value when handed over (FLAT when ``flat`` holds it). Left unset for a snapshot new but for
    # its ``live`` buffers: made when first read, from the snapshot with those buffers as they were.
    fp: Fingerprint
    owner: Any  # who gave it: a weak reference (or a callable returning None)
    owner_type: type | None
    nested: Sequence[tuple[int, str, str, type]]  # (id, owner name, label, type) of inner state_dicts
    always: bool  # judged whoever holds it (watched; a snapshot loaded into another node)
    flagged: bool
    aliases: Sequence[tuple[str, str]]  # what the probe found at this handover: warned about if unchanged
    shares: Sequence[tuple[str, str]]  # (snapshot path, live path) of its owner type: names a change
    adopter: Any  # a weak reference to another node this very snapshot was loaded into
    # (snapshot path, live path) of what the loading node kept when its load returned: judged even
    # after the node let go of it (``self.buf = self.buf[n:]``), since it changed while held.
    adopted: Sequence[tuple[str, str]]
    adopted_parts: AbstractSet[int]  # ids of the objects at those paths: is it still holding them?
    indexed: Sequence[tuple[Any, Any]]  # (the ledger's parts key, the part) of what the ledger follows
    # A snapshot new all the way down but for these tensors/arrays, each with its reduction when handed
    # over: only they can change by anyone's hand but the holder's, so a check compares them alone.
    live: Sequence[tuple[Any, Any]] | None
    key: Any  # what identifies the handover when it ends: the item, a thread, a work item, a weak reference
    keeper: Any  # who keeps it, weakly: a cached_property's instance, a copy and its original
    until: str  # when judging ends: RECEIPT, SYNC, LOADS, DEATH or TEARDOWN
    flat: Any  # a flat container of atoms, as a shallow copy: the whole value (atoms cannot change)
    plain: bytes | None  # the value's C pickle when it equals fp.detail: a later one compares without a fingerprint
    exclude: tuple[str, ...]  # paths not judged (parts that hold a lock: shared by design)
    origin: str  # "file:line in name" of the code that let the value out (a cache's function)
    parts: Sequence[tuple[str, Any, Fingerprint]]  # a copy's shared attributes: (name, value, fingerprint)
    fed: bool  # a pickled channel's feeder has pickled it: the receiver may have it now
    synced: bool  # judged at a receive of its sender's already
    ledger: Any  # the ledger an adapter's record reports to (the one recording when it was made)
    receivers: int  # an in-process message sent this many times before its first receipt: each takes it
    taken: bool  # one of those receivers has taken it: a change now is the others' to see
    handles: bool  # live objects the caller asked for (``state_dict(keep_vars=True)``): never judged as a snapshot
    sent: int  # a call: the serial of the last wait of any thread when it was sent (message_log.waited)

    def __init__(self, owner_name: str, label: str, kind: str, where: Where, thread: str, test: str | None,
                 obj: Any, fp: Fingerprint | None, owner: Any, always: bool) -> None:
        self.owner_name = owner_name
        self.label = label
        self.kind = kind
        self.where = where
        self.thread = thread
        self.test = test
        self.obj = obj
        if fp is not None:
            self.fp = fp
        self.owner = weak(owner)
        self.owner_type = None if isinstance(owner, str) else type(owner)
        self.always = always
        self.flagged = False
        # The ledger reads these on every handover: set, not left to __getattr__ (shared empties).
        self.nested = self.aliases = self.shares = self.adopted = ()
        self.adopter = None
        self.adopted_parts = _NONE

    if not TYPE_CHECKING:  # hidden from mypy, which would then allow any attribute
        def __getattr__(self, name: str) -> Any:
            """An unset slot reads as its default: records are made often, and most fields stay unset."""
            if name == "fp":
                return self._as_handed()
            try:
                return DEFAULTS[name]
            except KeyError:
                raise AttributeError(name) from None

    def _as_handed(self) -> Fingerprint:
        """The fingerprint of a snapshot new but for its live buffers, as handed over: the snapshot
        now, its live buffers read as they were then. Its new containers are the holder's to edit
        (never a finding), so only the buffers can have changed in a way that matters; it is made
        when a check first needs it (a buffer changed, a load, a report), not at every handover."""
        live = self.live
        if live is None:
            raise AttributeError("fp")
        fp = self.fp = fingerprint(self.obj, then={id(part): then for part, then in live})
        return fp

    def others(self) -> int:
        """References to the value besides this record's own: 0 when nobody else holds it."""
        return sys.getrefcount(self.obj) - 2  # less this slot's reference and getrefcount's argument

    def gone(self) -> bool:
        """Whether the value died (only a :class:`Snapshot` record can let it)."""
        return False


class Snapshot(Record):
    """A ledger record: a state method's snapshot, or a state a load was given.

    Held weakly when it can be (:meth:`let_go`): a snapshot the program dropped is judged by nobody
    (rule *Held*), and a strong reference here would keep it alive past the program's ``del``, which a
    program can see (a weak reference, a finaliser, a count of its class's instances). Held strongly
    while the ledger follows live parts through it (rule *Followed* compares the container they left),
    and when its type allows no weak reference (a plain dict, list or tuple)."""

    __slots__ = ("_strong", "_weak")
    _strong: Any  # the value, while held strongly
    _weak: weakref.ref | None  # a weak reference to it once let go

    if not TYPE_CHECKING:
        @property
        def obj(self) -> Any:
            ref = self._weak
            return self._strong if ref is None else ref()

        @obj.setter
        def obj(self, value: Any) -> None:
            self._strong, self._weak = value, None

    def let_go(self) -> None:
        """Hold the value weakly from now on, if its type allows it."""
        value = self._strong
        if self._weak is None and type(value).__weakrefoffset__:
            self._weak, self._strong = weakref.ref(value), None

    def weakly(self) -> bool:
        """Whether the value is held weakly (let go)."""
        return self._weak is not None

    def others(self) -> int:
        ref = self._weak
        if ref is None:
            return sys.getrefcount(self._strong) - 2
        value = ref()
        # This frame's name and getrefcount's argument: no record's reference among them.
        return 0 if value is None else sys.getrefcount(value) - 2

    def gone(self) -> bool:
        ref = self._weak
        return ref is not None and ref() is None


# The fields a record leaves unset until someone sets them, and what they read as meanwhile.
# Immutable, so that no record shares a list it could append to.
DEFAULTS: dict[str, Any] = {
    "owner": None, "owner_type": None, "nested": (), "aliases": (), "shares": (), "adopter": None, "adopted": (),
    "adopted_parts": frozenset(), "indexed": (), "live": None, "key": None, "keeper": None, "until": "teardown",
    "flat": None, "plain": None, "ledger": None, "exclude": (),
    "origin": "", "parts": (), "fed": False, "synced": False, "always": False, "test": None,
    "receivers": 1, "taken": False, "handles": False, "sent": 0,
}

# When judging a handover ends (``Record.until``).
RECEIPT = "receipt"  # an in-process message: its receiver takes the very object
SYNC = "sync"  # a pickled message: its sender's next receive after the feeder pickled it
LOADS = "loads"  # an out-of-band buffer: the receiver's loads
DEATH = "death"  # a cached_property's instance, a copy or its original dies
TEARDOWN = "teardown"  # the test's end

_new = object.__new__
_NONE: frozenset[int] = frozenset()


def handed(kind: str, owner_name: str, label: str, where: Where, thread: Any, obj: Any, fp: Fingerprint,
           until: str) -> Record:
    """An adapter's record: the fields every handover has, set without the ledger's extras."""
    rec: Record = _new(Record)
    rec.kind = kind
    rec.owner_name = owner_name
    rec.label = label
    rec.where = where
    rec.thread = thread
    rec.obj = obj
    rec.fp = fp
    rec.until = until
    rec.flagged = False
    return rec


def weak(obj: Any) -> Any:
    """A weak reference to *obj*; for an object that allows none, a reference that reads None and
    knows only the object's id (its liveness unknown)."""
    try:
        return weakref.ref(obj)
    except TypeError:
        return Unreferenced(id(obj))


class Unreferenced:
    """Stands for a weak reference to an object that allows none (``__slots__`` without
    ``__weakref__``): reads None; ``id`` is the object's id while it is alive."""

    __slots__ = ("id",)

    def __init__(self, ident: int) -> None:
        self.id = ident

    def __call__(self) -> None:
        return None


@dataclass
class Stats:
    handovers: int = 0
    checked: int = 0
    flagged: int = 0
    unverifiable: int = 0
    owners: Counter = field(default_factory=Counter)

    def merge(self, other: Stats) -> None:
        self.handovers += other.handovers
        self.checked += other.checked
        self.flagged += other.flagged
        self.unverifiable += other.unverifiable
        self.owners.update(other.owners)
