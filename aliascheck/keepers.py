"""Who refers to an object: the owner, the ledger, a caller's local, or a real keeper.

The facts the rules *Held* and *Kept in pieces* (:func:`aliascheck.judge.held`,
:func:`aliascheck.judge.kept_in_pieces`) decide on. The reference count gives a cheap first
look; a scan of the heap for referrers and this thread's callers' locals confirm, only before
something would be reported.

Each scan visits the whole heap (~20-35 ms with torch imported). A round of judging (a test's
end, a harness check) asks about many objects: the snapshots whose fingerprint changed, then
the containers that refer to them. Within a round the scans are shared (:class:`_Scans`): one
scan answers for every object the round expects to ask about, found in one pass at C speed
(``aliascheck._gate.referrers``), and is remembered until the round ends or the collector runs.
"""

from __future__ import annotations

import contextlib
import gc
import pickle
import sys
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import aliascheck.gate as gate
import aliascheck.mutability as mutability
import aliascheck.probe as probe
import aliascheck.sites as sites

from .records import Record


def held_elsewhere(rec: Record, local_refs: int) -> bool:
    """A cheap first look: more references than the record, the caller and the owner hold."""
    others = rec.others()  # 0 for a value that died
    if others <= local_refs:
        return False
    owner = rec.owner()
    owner_refs = probe.references_from(owner, rec.obj) if owner is not None else 0
    # Less the caller's locals and the owner's attributes.
    return others - local_refs - owner_refs > 0


# Referrers that pass a value through and keep nothing: a running frame (its locals are
# looked at by sites.held_by_callers) and an unpickler handing a state to __setstate__.
_PASSING = (types.FrameType, pickle.Unpickler, pickle._Unpickler)  # type: ignore[attr-defined]

WIDTH = 1024  # a dict with more keys is a table, not a state's structure: not looked into


def referenced_parts(root: Any, owned: list[Any], depth: int = 4) -> tuple[list[tuple[str, Any]], set[int]]:
    """(path, container) under *root*'s dicts with more references than the dict and the owner's
    attributes (*owned*) hold, deepest first; and the ids of the containers looked at."""
    found: list[tuple[str, Any]] = []
    inside = {id(root)}
    level: list[tuple[str, Any]] = [("", root)]
    for _ in range(depth):
        following = []
        for path, node in level:
            if not issubclass(type(node), dict) or len(node) > WIDTH:
                continue
            for key, value in list(node.items()):
                if not issubclass(type(value), mutability.CONTAINERS) or id(value) in inside:
                    continue
                inside.add(id(value))
                where = f"{path}[{key!r}]"
                # Less getrefcount's argument, this loop's variable, the list of items and the dict's entry.
                if sys.getrefcount(value) - 4 > sum(v is value for v in owned):
                    found.append((where, value))
                following.append((where, value))
        level = following
    return found[::-1], inside


def held_by(obj: Any, ignore: set[int], inside: set[int], depth: int, modules: bool = True,
            released: dict[int, frozenset[str]] | None = None) -> bool:
    """Whether something outside the ledger and the owner holds *obj*.

    A container that is part of another record's snapshot (a loaded checkpoint's
    sub-dict inside the outer one) holds *obj* only if it is itself held: a caller
    that dropped the whole checkpoint leaves the node that adopted a part of it as
    the only holder, which is no finding.
    """
    if sites.inherited():
        return _held_in_fork(obj, ignore | inside, modules)
    if sites.held_by_callers(obj, released):
        return True
    if not _referred(obj, ignore, inside, depth, released):
        return False
    # Only what is reachable keeps: a holder that is cyclic garbage (a dropped mock that
    # recorded the checkpoint) would otherwise decide the verdict by when the collector
    # last ran. Collected once per teardown round, only when a keeper would be confirmed
    # (never in a worker's hot path mid-test, where it would only shift the timing).
    if _collected.due:
        _collected.due = False
        _scans.forget()  # what a scan remembers would keep the garbage alive, and garbage refers
        gc.collect()
        return _referred(obj, ignore, inside, depth, released)
    return True


def _referred(obj: Any, ignore: set[int], inside: set[int], depth: int,
              released: dict[int, frozenset[str]] | None = None) -> bool:
    referrers = _scans.of(obj)
    deeper = ignore | {id(obj), id(referrers)}  # this very list refers to what it holds
    # The containers asked about next are scanned for together, at the first of them.
    _scans.expect(ref for ref in referrers if type(ref) in (tuple, dict) or id(ref) in inside)
    for ref in referrers:
        if id(ref) in ignore or issubclass(type(ref), _PASSING) or _call_record(ref) or _record(ref):
            continue
        if type(ref) in (tuple, dict) and _only_in_call_records(ref, ours=frozenset({id(referrers)})):
            continue  # the args tuple or kwargs dict of a mock's recorded calls: no keeper
        if id(ref) not in inside:
            return True
        if depth and held_by(ref, deeper, inside, depth - 1, released=released):
            return True
    return False


_MODULE_DEPTH = 3  # referrer steps from a value to a module that still make the module a holder in a child


def _held_in_fork(obj: Any, ignore: set[int], modules: bool, depth: int = 10, width: int = 512) -> bool:
    """In a forked child: whether a live frame (or, with *modules*, a module) reaches *obj* through
    its referrers.

    The child inherited the parent's objects with the frames that held them (the test, the
    ``DataLoader`` that forked): frozen there, never used again. A state adopted in the
    worker is the worker's own copy unless something the child still runs reaches it.
    Past the bounds, it counts as held, as everywhere else.
    """
    seen = set(ignore) | {id(obj)}
    if not modules and (reached := _reached(obj, seen, depth)) is not None:
        return reached
    level = [obj]
    for step in range(depth):
        if any(map(sites.held_by_callers, level)):
            return True
        seen.add(id(level))
        referrers = _referrers_of_any(level)
        seen.add(id(referrers))
        following = []
        for ref in referrers:
            if id(ref) in seen or _bookkeeping(ref):
                continue
            if issubclass(type(ref), (types.ModuleType, types.FunctionType)):  # a function: through its __globals__
                # A module's global or a container in one (a history list the worker appends to)
                # holds; a chain deeper than that runs through the parent's objects (its loader,
                # its checkpoint), frozen in the child with the frames that used them.
                if modules and step <= _MODULE_DEPTH:
                    return True
                continue
            seen.add(id(ref))
            following.append(ref)
        if not following:
            return False
        if len(following) > width:
            return True
        level = following
    return True


REACH_CAP = 1 << 15  # objects a forward look from the callers' locals visits before it gives up


def _reached(obj: Any, skip: set[int], depth: int) -> bool | None:
    """:func:`_held_in_fork` without modules, looked at the other way: whether a local of a frame
    this child runs reaches *obj* within *depth* - 1 references, through none of the objects the
    walk back passes over (*skip*, frames, modules, functions, records, aliascheck's own, the
    process's own arguments). None past :data:`REACH_CAP` objects: the caller walks back.

    Each step back is a scan of the whole heap (``gc.get_referrers``, ~20 ms with torch imported;
    a forked worker's loaded state sits several levels under the parent's frozen objects). Each
    step forward costs only what it visits, from the few locals of the frames that still run. A
    chain found either way is the same chain; past the walk back's own bounds (width, depth) it
    said "held" without knowing, and this look knows.
    """
    target = id(obj)
    seen = set(skip)
    seen.discard(target)
    level = []
    for value in sites.callers_locals():
        if value is obj:
            return True
        if id(value) not in seen and gc.is_tracked(value) and not _passed_over(value):
            seen.add(id(value))
            level.append(value)
    visited = len(level)
    for _ in range(depth - 1):
        if not level:
            return False
        referents = gc.get_referents(*level)
        if len(referents) > REACH_CAP:  # before a Python loop over them: a local may be huge
            return None
        following = []
        for ref in referents:
            key = id(ref)
            if key == target:
                return True
            if key in seen:
                continue
            seen.add(key)
            # Untracked by the collector (atoms, containers of atoms only): no holder of anything
            # tracked, and invisible to the walk back's gc.get_referrers as well.
            if gc.is_tracked(ref) and not _passed_over(ref):
                following.append(ref)
        visited += len(following)
        if visited > REACH_CAP:
            return None
        level = following
    return False


def _passed_over(ref: Any) -> bool:
    """What the forward look passes over: what the walk back does, and modules and functions (no
    holders of a loaded state in a child)."""
    return issubclass(type(ref), (types.ModuleType, types.FunctionType)) or _bookkeeping(ref)


def _bookkeeping(ref: Any) -> bool:
    """No holder in a forked child, either way: a frame (its locals are looked at directly), an
    unpickler, a mock's call record, aliascheck's own, the process's own start arguments."""
    return issubclass(type(ref), _PASSING) or _call_record(ref) or _ours(ref) or _started_with(ref)


def _started_with(ref: Any) -> bool:
    """The child's own process object (its ``_args``): what the child was started with is a
    message it received, and a received message is the receiver's."""
    process = sys.modules.get("multiprocessing.process")
    if process is None:
        return False
    me = process.current_process()
    return ref is me or ref is getattr(me, "__dict__", None)


def _record(ref: Any) -> bool:
    """A record of any kind (the boundary's kept values and handed arguments included): bookkeeping."""
    return type(ref).__module__ in _RECORDS


_RECORDS = ("aliascheck.records", "aliascheck.boundary.runtime")


def _ours(ref: Any) -> bool:
    """aliascheck's own bookkeeping (a session, the ledger's tables): never a holder."""
    return (type(ref).__module__ or "").startswith("aliascheck")


class _Collected:
    due = False  # one flag for every thread


_collected = _Collected()


@contextlib.contextmanager
def collecting() -> Iterator[None]:
    """A round of judging at teardown (or a harness check): garbage may be new, so it is collected
    once before a keeper is confirmed. Never during the body, in a worker's hot path. The round's
    heap scans are shared by this thread's questions until it ends (:class:`_Scans`)."""
    _collected.due = True
    _scans.begin()
    try:
        yield
    finally:
        _collected.due = False
        _scans.end()


def expect(objs: Iterable[Any]) -> None:
    """The round will ask who holds each of *objs* (held by the ledger's records: no lifetime is
    extended): one scan then answers for all of them, also after the collector ran."""
    _scans.expect(objs, asked=True)


def _referrers_here(targets: list[Any], skip: set[int]) -> list[list[Any]]:
    """The reference of ``aliascheck._gate.referrers``: one ``gc.get_referrers`` per target."""
    found = [gc.get_referrers(target) for target in targets]
    mine = skip | {id(found), id(targets)} | set(map(id, found))  # a later target's scan sees the earlier lists
    return [[ref for ref in refs if id(ref) not in mine] for refs in found]


_referrers: Callable[[list[Any], set[int]], list[list[Any]]] = (
    gate._compiled.referrers if gate.COMPILED else _referrers_here)


def _referrers_of_any(level: list[Any]) -> list[Any]:
    """Every object that refers to one of *level* (once each), as ``gc.get_referrers(*level)``
    answers, in one scan however wide the level: CPython's compares each reference with every
    target."""
    if len(level) < 2:
        return gc.get_referrers(*level)
    out: dict[int, Any] = {}
    for refs in _referrers(list(level), {id(level)}):
        out.update((id(ref), ref) for ref in refs)
    return list(out.values())


SPECULATE = 1024  # containers a scan adds to the next one's targets, beyond those asked for


class _Scans:
    """The heap scans of one round of judging, shared by the thread that runs the round.

    A question about an object not yet scanned for scans for it and for every object the round
    expects to ask about (:meth:`expect`) in one pass, and for the plain containers that referred
    to the last scan's targets (the next level of the walk back, asked about next in most rounds).
    What a scan found is remembered until the round ends or the collector runs (it would keep
    garbage alive): the memory's own containers are passed over by every later scan, so that they
    never show as holders. Outside a round, or in another thread, each question is one scan, as
    ``gc.get_referrers`` answers it.
    """

    def __init__(self) -> None:
        self.thread: int | None = None
        self.found: dict[int, tuple[Any, list[Any]]] = {}  # id -> (object, its referrers)
        self.pending: list[Any] = []
        self.asked: list[Any] = []  # the round's own questions: asked again after the collector ran
        self.skip: set[int] = set()

    def begin(self) -> None:
        if self.thread is None:
            self.thread = threading.get_ident()
            self.forget()

    def end(self) -> None:
        if self.thread == threading.get_ident():
            self.thread = None
            self.asked = []
            self.forget()

    def forget(self) -> None:
        self.found = {}
        self.pending = list(self.asked)
        self.skip = {id(self.found), id(self.pending), id(self.asked)}

    def _mine(self) -> bool:
        return self.thread is not None and self.thread == threading.get_ident()

    def expect(self, objs: Iterable[Any], asked: bool = False) -> None:
        if not self._mine():
            return
        for obj in objs:
            if asked:
                self.asked.append(obj)
            if id(obj) not in self.found and len(self.pending) < 4 * SPECULATE:
                self.pending.append(obj)

    def of(self, obj: Any) -> list[Any]:
        """Who refers to *obj* (as ``gc.get_referrers`` answers, less this memory's own)."""
        if not self._mine():
            return gc.get_referrers(obj)
        entry = self.found.get(id(obj))
        if entry is not None and entry[0] is obj:
            return entry[1]
        targets, ids = [obj], {id(obj)}
        for other in self.pending:
            if id(other) not in ids and id(other) not in self.found:
                ids.add(id(other))
                targets.append(other)
        self.pending.clear()
        if len(targets) == 1:  # one target: the interpreter's own scan, which builds no list of the heap
            lists = [[ref for ref in gc.get_referrers(obj) if id(ref) not in self.skip and ref is not targets]]
        else:
            lists = _referrers(targets, self.skip)
        speculated = 0
        for target, refs in zip(targets, lists, strict=True):
            entry = (target, refs)
            self.found[id(target)] = entry
            self.skip.update((id(entry), id(refs)))
            for ref in refs:
                if speculated < SPECULATE and type(ref) in (tuple, dict, list) and id(ref) not in self.found:
                    self.pending.append(ref)
                    speculated += 1
        return self.found[id(obj)][1]


_scans = _Scans()


def _call_record(ref: Any) -> bool:
    """A ``unittest.mock`` call record: a mock standing in for ``torch.save`` only records the
    call; what the real function would have serialised at the call is not kept state."""
    mock = sys.modules.get("unittest.mock")
    return mock is not None and issubclass(type(ref), mock._Call)


def _only_in_call_records(ref: Any, depth: int = 3, ours: frozenset[int] = frozenset()) -> bool:
    """A container held, through plain containers only, by nothing but mock call records: the args
    tuple or kwargs dict of a recorded call, or a checkpoint dict inside one (a ``Mock(wraps=torch.save)``
    records every checkpoint it was handed)."""
    if sys.modules.get("unittest.mock") is None:
        return False
    holders = _scans.of(ref)
    mine = ours | {id(holders)}  # this very list refers to what it holds
    found = False
    for holder in holders:
        if id(holder) in mine or issubclass(type(holder), _PASSING):
            continue
        found = True
        if _call_record(holder):
            continue
        if depth and type(holder) in (tuple, dict, list) and _only_in_call_records(holder, depth - 1, mine):
            continue
        return False
    return found
