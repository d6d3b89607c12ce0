"""Who holds a snapshot: the owner, the ledger, a caller's local, or a real keeper.

A snapshot is judged only while something other than its owner keeps it (or keeps a
changed part of it). The reference count gives a cheap first look; ``gc.get_referrers``
and this thread's callers' locals confirm, only before something would be reported.
*records* is the ledger's table: its own references are never keepers.
"""

from __future__ import annotations

import contextlib
import gc
import pickle
import sys
import types
from collections.abc import Iterator
from typing import Any

import aliascheck.mutability as mutability
import aliascheck.probe as probe
import aliascheck.sites as sites

from .fingerprint import Fingerprint
from .kinds import LOAD_METHODS
from .records import Record


def held_elsewhere(rec: Record, local_refs: int) -> bool:
    """A cheap first look: more references than the record, the caller and the owner hold."""
    owner = rec.owner()
    owner_refs = probe.references_from(owner, rec.obj) if owner is not None else 0
    # Less the record's own reference, the caller's locals and the owner's attributes.
    return probe.refcount(rec.obj) - 1 - local_refs - owner_refs > 0


def kept(records: dict[int, Record], rec: Record, local_refs: int = 0) -> bool:
    """Whether a container or object other than the owner keeps *rec*'s snapshot.

    The reference count also counts locals of code running in other threads right
    now (a fixed node's worker copying the snapshot it was just given): transient,
    not a keeper. ``gc.get_referrers`` sees containers, attribute dicts and queues,
    never a running function's locals; the locals of this thread's callers (a test
    body holding ``state`` while it calls ``check_node``) are looked at directly.
    Both scan, so they only confirm what would otherwise become a finding.
    """
    if not held_elsewhere(rec, local_refs):
        return False
    ignore = {id(r) for r in records.values()}  # the ledger's own references
    owner = rec.owner()
    if owner is not None:
        ignore.add(id(owner))  # an owner whose __dict__ is the snapshot (``self.__dict__ = state``)
        with contextlib.suppress(TypeError):
            attrs = vars(owner)
            ignore.add(id(attrs))
            ignore.update(id(v) for v in attrs.values() if isinstance(v, (dict, list, tuple)))
    inside: set[int] = set()
    for other in records.values():
        if other is not rec:
            inside.update(map(id, probe.reachable(other.obj)))  # C speed: no Python loop per part
    # In a forked child, a loaded state is the child's copy of what it was started with: the
    # parent's objects around it (its checkpoint, its loader, in a module's globals) are frozen
    # copies nobody in the child reads again. Only what the child runs now holds it.
    loaded_in_child = sites.inherited() and rec.kind in LOAD_METHODS
    return held_by(rec.obj, ignore, inside, 6, modules=not loaded_in_child)


def part_kept(records: dict[int, Record], rec: Record, fp: Fingerprint) -> list[str]:
    """The paths of the changed parts of *rec*'s snapshot kept outside it, though the snapshot is not.

    A consumer that keeps the pieces rather than the whole: torchdata's
    ``_IncrementalState`` flattens the dataset's ``state_dict()`` and keeps its leaves,
    so a live list in it is compared with itself at the next snapshot and its growth
    never reaches the checkpoint. Only containers under the snapshot's dicts are looked
    at, each first by its reference count (O(1)); the diff and ``gc.get_referrers`` run
    only for a part something else refers to.
    """
    owner = rec.owner()
    try:
        attrs = vars(owner) if owner is not None else {}
    except TypeError:
        attrs = {}
    candidates, inside = _referenced_parts(rec.obj, list(attrs.values()))
    if not candidates:
        return []
    from .diff import diff

    changed = [c.path for c in diff(rec.fp, fp) if c.path]
    wanted = [(path, part) for path, part in candidates if any(c.startswith(path) for c in changed)]
    if not wanted:
        return []
    # The owner keeps its own parts (as an object when its attributes live inline, not in a __dict__);
    # this look's own (path, part) pairs are no keepers either.
    ignore = {id(r) for r in records.values()} | inside | {id(attrs), id(owner), id(candidates)}
    ignore.update(map(id, candidates))
    ignore.update(map(id, wanted))
    kept_parts = [(path, part) for path, part in wanted if held_by(part, ignore, set(), 4)]
    if not kept_parts:
        return []
    # A part inside an earlier snapshot of the same owner (its last state_dict(), still recorded) is
    # held only if that snapshot is held, as in kept(): looked at only to confirm.
    others: set[int] = set()
    for other in records.values():
        if other is not rec and other.owner_type is rec.owner_type and other.owner() is owner:
            others.update(map(id, probe.reachable(other.obj)))
    if not others:
        return [path for path, _ in kept_parts]
    return [path for path, part in kept_parts if held_by(part, ignore, others - {id(part)}, 4)]


# Referrers that pass a value through and keep nothing: a running frame (its locals are
# looked at by sites.held_by_callers) and an unpickler handing a state to __setstate__.
_PASSING = (types.FrameType, pickle.Unpickler, pickle._Unpickler)  # type: ignore[attr-defined]

WIDTH = 1024  # a dict with more keys is a table, not a state's structure: not looked into


def _referenced_parts(root: Any, owned: list[Any], depth: int = 4) -> tuple[list[tuple[str, Any]], set[int]]:
    """(path, container) under *root*'s dicts with more references than the dict and the owner's
    attributes (*owned*) hold, deepest first; and the ids of the containers looked at."""
    found: list[tuple[str, Any]] = []
    inside = {id(root)}
    level: list[tuple[str, Any]] = [("", root)]
    for _ in range(depth):
        following = []
        for path, node in level:
            if not isinstance(node, dict) or len(node) > WIDTH:
                continue
            for key, value in list(node.items()):
                if not isinstance(value, mutability.CONTAINERS) or id(value) in inside:
                    continue
                inside.add(id(value))
                where = f"{path}[{key!r}]"
                # Less getrefcount's argument, this loop's variable, the list of items and the dict's entry.
                if sys.getrefcount(value) - 4 > sum(v is value for v in owned):
                    found.append((where, value))
                following.append((where, value))
        level = following
    return found[::-1], inside


def held_by(obj: Any, ignore: set[int], inside: set[int], depth: int, modules: bool = True) -> bool:
    """Whether something outside the ledger and the owner holds *obj*.

    A container that is part of another record's snapshot (a loaded checkpoint's
    sub-dict inside the outer one) holds *obj* only if it is itself held: a caller
    that dropped the whole checkpoint leaves the node that adopted a part of it as
    the only holder, which is no finding.
    """
    if sites.inherited():
        return _held_in_fork(obj, ignore | inside, modules)
    if sites.held_by_callers(obj):
        return True
    if not _referred(obj, ignore, inside, depth):
        return False
    # Only what is reachable keeps: a holder that is cyclic garbage (a dropped mock that
    # recorded the checkpoint) would otherwise decide the verdict by when the collector
    # last ran. Collected once per teardown round, only when a keeper would be confirmed
    # (never in a worker's hot path mid-test, where it would only shift the timing).
    if _collected.due:
        _collected.due = False
        gc.collect()
        return _referred(obj, ignore, inside, depth)
    return True


def _referred(obj: Any, ignore: set[int], inside: set[int], depth: int) -> bool:
    referrers = gc.get_referrers(obj)
    deeper = ignore | {id(obj), id(referrers)}  # this very list refers to what it holds
    for ref in referrers:
        if id(ref) in ignore or isinstance(ref, _PASSING) or _call_record(ref) or _record(ref):
            continue
        if type(ref) in (tuple, dict) and _only_in_call_records(ref, ours=frozenset({id(referrers)})):
            continue  # the args tuple or kwargs dict of a mock's recorded calls: no keeper
        if id(ref) not in inside:
            return True
        if depth and held_by(ref, deeper, inside, depth - 1):
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
    level = [obj]
    for step in range(depth):
        if any(map(sites.held_by_callers, level)):
            return True
        seen.add(id(level))
        referrers = gc.get_referrers(*level)
        seen.add(id(referrers))
        following = []
        for ref in referrers:
            if id(ref) in seen or isinstance(ref, _PASSING) or _call_record(ref) or _ours(ref) or _started_with(ref):
                continue
            if isinstance(ref, (types.ModuleType, types.FunctionType)):  # a function: through its __globals__
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


_RECORDS = ("aliascheck.records", "aliascheck.boundary")


def _ours(ref: Any) -> bool:
    """aliascheck's own bookkeeping (a session, the ledger's tables): never a holder."""
    return (type(ref).__module__ or "").startswith("aliascheck")


class _Collected:
    due = False  # one flag for every thread


_collected = _Collected()


@contextlib.contextmanager
def collecting() -> Iterator[None]:
    """A round of judging at teardown (or a harness check): garbage may be new, so it is collected
    once before a keeper is confirmed. Never during the body, in a worker's hot path."""
    _collected.due = True
    try:
        yield
    finally:
        _collected.due = False


def _call_record(ref: Any) -> bool:
    """A ``unittest.mock`` call record: a mock standing in for ``torch.save`` only records the
    call; what the real function would have serialised at the call is not kept state."""
    mock = sys.modules.get("unittest.mock")
    return mock is not None and isinstance(ref, mock._Call)


def _only_in_call_records(ref: Any, depth: int = 3, ours: frozenset[int] = frozenset()) -> bool:
    """A container held, through plain containers only, by nothing but mock call records: the args
    tuple or kwargs dict of a recorded call, or a checkpoint dict inside one (a ``Mock(wraps=torch.save)``
    records every checkpoint it was handed)."""
    if sys.modules.get("unittest.mock") is None:
        return False
    holders = gc.get_referrers(ref)
    mine = ours | {id(holders)}  # this very list refers to what it holds
    found = False
    for holder in holders:
        if id(holder) in mine or isinstance(holder, _PASSING):
            continue
        found = True
        if _call_record(holder):
            continue
        if depth and type(holder) in (tuple, dict, list) and _only_in_call_records(holder, depth - 1, mine):
            continue
        return False
    return found
