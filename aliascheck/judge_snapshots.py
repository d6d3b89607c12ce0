"""The judge's rules for the ledger's snapshots: *Shared*, *Held*, *Followed*, *Loads*, *Kept in pieces*.

Part of :mod:`aliascheck.judge`, which re-exports every name here: read the rules there, in
the order and with the names of docs/judged.md. The ledger records, looks up and asks; each
function here decides, from facts the mechanism modules answer (:mod:`aliascheck.probe`: what
a snapshot shares with its owner, its parts by path; :mod:`aliascheck.keepers`: who refers to
an object; :mod:`aliascheck.diff`). *led* is the asking :class:`aliascheck.ledger.Ledger`
(its records, its counters, its one producer of findings ``report``); this module does not
import it.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import types
from typing import Any

import aliascheck.keepers as keepers
import aliascheck.probe as probe
import aliascheck.sites as sites

from .diff import Change, diff
from .fingerprint import Fingerprint, fingerprint
from .kinds import LOAD_METHODS, STATE_METHODS
from .mutability import ATOMS as _ATOMS
from .records import Record, Unreferenced

SHARED_DEPTH = 8  # how deep a judged owner is walked for what its snapshot shares (a Loader's pipeline)
SHARED_LIMIT = 1 << 16


# -- the verdict on a changed snapshot: the rules below, in turn ---------------------------
def snapshot_changed(led: Any, rec: Record, fp: Fingerprint, check: str, within: list[str] | None = None) -> bool:
    """Report what changed in *rec*'s snapshot (only under the paths *within*, if given: *Kept in
    pieces*, *Followed*) and counts under *Shared* or *Loads*; True if something was reported. If every
    change was ignored, the snapshot as it is now is the baseline."""
    changes = own_changes(led.records, rec, diff(rec.fp, fp, collapse=True, reads=True))
    if within is not None:
        changes = [c for c in changes if any(c.path.startswith(path) for path in within)]
    shares = rec.shares
    adopter = rec.adopter() if rec.adopter is not None else None
    if adopter is not None or (rec.kind in LOAD_METHODS and not rec.always):
        changes, shares = loads(rec, changes, adopter)
    elif not rec.always and changes and (node := rec.owner()) is not None:
        changes, shares = shared(rec, changes, node)
    found = 0
    # A snapshot another node adopted changed in what that node kept: the line to blame is
    # the adopter's load keeping it, even in a library (torchdata's MultiNodeWeightedSampler.reset).
    adopted = sites.origin(type(adopter), LOAD_METHODS, users_only=False) if adopter is not None else ""
    for owner, label, owner_type, group in by_owner(rec, changes):
        found += len(led.report(
            "mutation", group, owner=owner, label=label, site=rec.where.site, stack=rec.where.stack,
            thread=rec.thread, check=check, origin=adopted or origin(rec, owner_type),
            aliases=shares,
        ))
    if not found:
        if within is None:  # every change was ignored: the snapshot as it is now is the baseline
            rec.fp = fp
        return False
    rec.flagged = True
    return True


# -- Shared ---------------------------------------------------------------------------------
def shared(rec: Record, changes: list[Change], node: Any) -> tuple[list[Change], list[tuple[str, str]]]:
    """*Shared*: a change is a finding only in an object the snapshot shares with its owner's live
    state (by identity, or for tensors and arrays by the memory they view); a holder popping a key
    from the fresh dict ``state_dict()`` returned edits its own container. Returns (what counts, the
    aliases that name it)."""
    live = probe.aliases(rec.obj, node, type(node).__name__, depth=SHARED_DEPTH, limit=SHARED_LIMIT)
    changes = [c for c in changes if any(c.path.startswith(path) for path, _ in live)]
    return changes, [*rec.shares, *live]  # the inner owners' names first (Shards.pos, not Batcher.source.pos)


def own_changes(records: dict[int, Record], rec: Record, changes: list[Change]) -> list[Change]:
    """*Shared*, whose change: a part that has a record of its own is judged by that record."""
    if len(records) == 1:
        return changes
    foreign = [
        path for path, part in probe.parts(rec.obj, "", 6, False)
        if path and id(part) in records and records[id(part)].obj is part
    ]
    return [c for c in changes if not any(c.path.startswith(p) for p in foreign)]


def by_owner(rec: Record, changes: list[Change]) -> list[tuple[str, str, type | None, list[Change]]]:
    """*Shared*, whose change: each change blamed on the owner that made its part (an inner
    ``state_dict()``'s, or the record's)."""
    owners = _nested_owners(rec)
    groups: dict[str, tuple[str, str, type | None, list[Change]]] = {}
    for change in changes:
        who = next((o[1:] for o in owners if change.path.startswith(o[0])),
                   (rec.owner_name, rec.label, rec.owner_type))
        groups.setdefault(who[1], (*who, []))[3].append(change)
    return list(groups.values())


def origin(rec: Record, owner_type: type | None) -> str:
    """*Shared*, whose change: the line a finding blames, the owner's state method; for a loaded state
    (*Loads*) the load's own line, library or not (a node keeping what it was given)."""
    if owner_type is None or rec.kind == "watch":
        return ""
    if rec.kind in LOAD_METHODS:
        return sites.origin(owner_type, LOAD_METHODS, users_only=False)
    return sites.origin(owner_type, STATE_METHODS)


def _nested_owners(rec: Record) -> list[tuple[str, str, str, type]]:
    if not rec.nested:
        return []
    # Modules hand one destination dict down to their children: that is the outer owner's.
    ids = {i: (o, lbl, t) for i, o, lbl, t in rec.nested if i != id(rec.obj)}
    found = [(path, *ids[id(part)]) for path, part in probe.parts(rec.obj, "", 8, False) if id(part) in ids]
    return sorted(found, key=lambda e: -len(e[0]))


def alias_warnings(led: Any, rec: Record, changed: set[str]) -> set[str]:
    """*Shared*: sharing that never turned into a change is an ``alias`` warning, for a snapshot still
    held (*Held*) and an owner with no proven change (*changed*); returns the owners warned about."""
    if not rec.aliases or rec.flagged or rec.gone() or not (rec.always or held(led, rec)):
        return set()  # a dropped one is no risk
    warned = set()
    for owner, label, owner_type, group in by_owner(rec, [
        Change(path, owner_path, "shared, not changed (yet)") for path, owner_path in rec.aliases
    ]):
        if owner in changed:
            continue
        warned.add(owner)
        led.report("alias", group, owner=owner, label=label, site=rec.where.site,
                   stack=rec.where.stack, thread=rec.thread, check="alias-probe",
                   origin=origin(rec, owner_type), aliases=rec.aliases)
    return warned


# -- Held -----------------------------------------------------------------------------------
def judged(rec: Record) -> bool:
    """*Held*, the cheap first look: a watched record, one another node adopted, or a snapshot with
    more references than its record, the caller and its owner hold. Never one the program let die."""
    return not rec.gone() and not rec.handles and (
        rec.always or rec.adopter is not None or keepers.held_elsewhere(rec, 0))


def held(led: Any, rec: Record, local_refs: int = 0, passing: frozenset[int] = frozenset()) -> bool:
    """*Held*: a snapshot is judged only while a container or object other than its owner keeps it;
    the ledger's records, a container that is only part of another recorded snapshot, and (in a
    forked child, for a loaded state) the parent's frozen objects are no keepers.

    The reference count also counts locals of code running in other threads right
    now (a fixed node's worker copying the snapshot it was just given): transient,
    not a keeper. ``gc.get_referrers`` sees containers, attribute dicts and queues,
    never a running function's locals; the locals of this thread's callers (a test
    body holding ``state`` while it calls ``check_node``) are looked at directly.
    Both scan, so they only confirm what would otherwise become a finding.
    """
    if not keepers.held_elsewhere(rec, local_refs):
        return False
    records = led.records
    ignore = {id(r) for r in records.values()}  # the ledger's own references
    ignore |= passing  # a wrapper's own tuple of the call's arguments (a class imported before the marking)
    owner = rec.owner()
    if owner is not None:
        ignore.add(id(owner))  # an owner whose __dict__ is the snapshot (``self.__dict__ = state``)
        with contextlib.suppress(TypeError):
            attrs = vars(owner)
            ignore.add(id(attrs))
            ignore.update(id(v) for v in attrs.values() if isinstance(v, (dict, list, tuple)))
    released = dict(led.released)
    for frame in sites.frames_looked_at() if released else ():
        if id(frame) in released:  # its names are looked at one by one (sites.held_by_callers)
            ignore.update((id(frame), id(frame.f_locals)))
    inside: set[int] = set(led.released_values)
    for other in records.values():
        if other is not rec:
            inside.update(map(id, probe.reachable(other.obj)))  # C speed: no Python loop per part
    # In a forked child, a loaded state is the child's copy of what it was started with: the
    # parent's objects around it (its checkpoint, its loader, in a module's globals) are frozen
    # copies nobody in the child reads again. Only what the child runs now holds it.
    loaded_in_child = sites.inherited() and rec.kind in LOAD_METHODS
    return keepers.held_by(rec.obj, ignore, inside, 6, modules=not loaded_in_child, released=released)


def held_changed(led: Any, rec: Record, fp: Fingerprint, check: str) -> None:
    """*Held*, then *Kept in pieces*: a changed snapshot is judged whole while someone keeps it (a
    watched or adopted one whoever holds it), else only where a consumer kept its changed parts."""
    adopter = rec.adopter() if rec.adopter is not None else None
    unknown = type(rec.adopter) is Unreferenced  # an adopter that allows no weak reference: by its id
    if rec.always or (rec.adopter is not None and adopter is None and not unknown) or held(led, rec):
        snapshot_changed(led, rec, fp, check)
    elif within := kept_in_pieces(led.records, rec, fp, adopter, rec.adopter.id if unknown else None):
        # Loaded straight into another node (an optimizer's state transplanted, ``copy.copy`` through
        # ``__setstate__``): judged where someone besides that node holds a changed part (the node that
        # handed it over, still sharing it). Held by the adopter alone (its original dropped: pyparsing's
        # left-recursion memo returns ``copy.copy(prev_result)`` and lets go of prev_result), it is the
        # adopter's own state.
        snapshot_changed(led, rec, fp, check, within)


def pieces_changed(led: Any, rec: Record, fp: Fingerprint, check: str) -> None:
    """*Kept in pieces*, for a snapshot nobody holds (:func:`buffer_pieces` found its live buffers
    referred to elsewhere): judged where a consumer kept a changed buffer of it."""
    if within := kept_in_pieces(led.records, rec, fp, buffers_only=True):
        snapshot_changed(led, rec, fp, check, within)


def rehandover(led: Any, prev: Record, fp: Fingerprint, local_refs: int) -> None:
    """*Held*: the same object handed over again, changed, is judged while an earlier keeper still
    holds it (or, *Kept in pieces*, a changed part of it); nobody kept it: the new one is the baseline."""
    if prev.flagged or prev.handles or prev.fp.digest == fp.digest:
        return
    if held(led, prev, local_refs):
        led.stats.checked += 1
        snapshot_changed(led, prev, fp, "handover")
    elif within := kept_in_pieces(led.records, prev, fp):  # judged only where the consumer kept it
        led.stats.checked += 1
        snapshot_changed(led, prev, fp, "handover", within)
    else:  # nobody kept the earlier snapshot: the new one is the baseline now
        prev.fp = fp


# -- Followed -------------------------------------------------------------------------------
def followed(led: Any, rec: Record, parts: set[int]) -> None:
    """*Followed*: live parts of a dropped snapshot coming back (through a load) inside another
    container: what changed in them (only in them) is judged; the rest of the snapshot they left
    was dropped (a clone taken next to a live part changes nothing anyone holds)."""
    if rec.flagged:
        return
    fp = fingerprint(rec.obj)  # the record keeps its container, so the parts are the same ones
    with led.lock:
        led.stats.checked += 1
        if not rec.flagged and fp.digest != rec.fp.digest:
            within = list(probe.paths_to(rec.obj, "", parts, 8, objects=False).values())
            snapshot_changed(led, rec, fp, "reentry", within)


def earlier_inside(led: Any, obj: Any) -> None:
    """*Followed*: a new snapshot holding an earlier one that changed since (a state cached across
    ``next()``: torchdata's ``LoaderIterator.has_next``, ``Unbatcher``) is judged when handed out.

    One level deep, by an id-set intersection at C speed; a long list is not looked into.
    """
    if not led.records:
        return
    if isinstance(obj, dict):
        values: Any = obj.values()
    elif isinstance(obj, (list, tuple)) and len(obj) <= 1024:
        values = obj
    else:
        return
    known = led.records.keys()
    for key in set(filter(known.__contains__, map(id, values))):  # no set of every value's id
        prev = led.records[key]
        if not prev.flagged and not prev.gone():  # a dead snapshot's id, taken by a new value
            rehandover(led, prev, fingerprint(prev.obj), 0)


# -- Loads ----------------------------------------------------------------------------------
def loads(rec: Record, changes: list[Change], adopter: Any) -> tuple[list[Change], list[tuple[str, str]]]:
    """*Loads*: what was passed into ``reset``/``load_state_dict`` counts only in the parts the loading
    node kept (the adopter's, for a snapshot loaded straight into another node); torch's default
    ``load_state_dict`` copies, a ``reset()`` that deep-copies keeps nothing. Returns (what counts,
    the aliases that name it)."""
    if adopter is not None:  # only what the adopting node kept is shared by both
        kept = probe.aliases(rec.obj, adopter, type(adopter).__name__, depth=SHARED_DEPTH, limit=SHARED_LIMIT)
        changes = [c for c in changes if any(c.path.startswith(path) for path, _ in kept)]
        return changes, [*rec.shares, *kept]
    node = rec.owner()
    shares = [] if node is None else probe.aliases(rec.obj, node, type(node).__name__)
    shares = [*shares, *(pair for pair in rec.adopted if pair not in shares)]  # kept at the load
    return [c for c in changes if any(c.path.startswith(path) for path, _ in shares)], shares


def load_wrote(led: Any, rec: Record, node: Any, before: Fingerprint, fp: Fingerprint,
               local_refs: int = 2, passing: frozenset[int] = frozenset()) -> list[Change]:
    """*Loads*: a load writing into the state it was given is a finding at once while the caller or
    someone else holds that state; written into a throwaway (or the node itself inside its own
    state, or a part another owner handed over) it is not. Returns the changes to report; the
    state as the load left it is the baseline either way."""
    # A part handed over by another owner (a live snapshot inside the checkpoint) may
    # be changing in that owner's worker right now: its own record judges it.
    changes = own_changes(led.records, rec, diff(before, fp, collapse=True, reads=True))
    live = set(filter(led.parts.keys().__contains__, map(id, probe.reachable(rec.obj))))
    # The loading node itself inside its state (a tree's ``children[0].parent``, unpickled):
    # setting its own attributes is the load, not a write into the caller's state.
    live.add(id(node))
    paths = probe.paths_to(rec.obj, "", live, 8, objects=True).values()
    changes = [c for c in changes if not any(c.path.startswith(p) for p in paths)]
    rec.fp = fp  # reported once: later checks compare with the state as the load left it
    # Written into a throwaway (``load_state_dict(copy.deepcopy(ckpt))``, the unpickler's
    # fresh dict a ``__setstate__`` takes over): nobody else holds what changed, so it is
    # judged later as loads are, from the state as the load left it.
    # *local_refs*: the load recording's and Ledger.after_load's references to the state.
    if not changes or not held(led, rec, local_refs=local_refs, passing=passing):
        return []
    return changes


def adopted_changed(led: Any, rec: Record, check: str, local_refs: int = 0) -> None:
    """*Loads*: what a project's node kept at the load is judged again (its next state call, a new
    load, letting go of it, its death) while the caller or anyone but the ledger holds it.

    Found changed while nobody but its node holds it, it is that node's own state: nobody
    else can reach it again but through the node (whose state calls are handovers of their
    own), so it is retired, not walked for holders again at every state call (a forked
    worker's dataset that adopted its start state and advances it in place, at every item)."""
    if rec.flagged or not keepers.held_elsewhere(rec, local_refs):
        return
    fp = fingerprint(rec.obj)
    with led.lock:
        led.stats.checked += 1
        if rec.flagged or fp.digest == rec.fp.digest:
            return
        if held(led, rec, local_refs):
            snapshot_changed(led, rec, fp, check)
        else:  # changed while only its node held it: the node's own state from now on
            led.retire(rec)


# -- Kept in pieces -------------------------------------------------------------------------
def buffer_pieces(rec: Record, owned: bool = True) -> list[tuple[str, Any]]:
    """(path, tensor or array) of the live buffers the ledger follows through *rec*'s snapshot:
    ``best = {k: v.cpu() for k, v in model.state_dict().items()}`` drops the snapshot and keeps its
    very tensors (``.cpu()`` of a CPU tensor is the tensor), which the owner's training then writes.
    Not *owned*: the owner's own objects are not told apart (no walk of it: at every handover)."""
    if rec.handles or not rec.indexed or rec.gone():
        return []
    types_ = probe.buffer_types()
    live = {id(part) for part, _ in rec.live or ()}
    runtime = sys.modules.get("aliascheck.boundary.runtime")
    # Written in place by the project since (``shadow[k].mul_(d)`` of an EMA's own dict of them): handles
    # it keeps to write through, not a value it kept (rule *Who wrote it, for whom*).
    written = runtime._test.written if runtime is not None and runtime._on else {}
    wanted = set()
    for _, part in rec.indexed:
        # The snapshot's slot, the ledger's pair (and its live pair), this loop's name, getrefcount's
        # argument: held by nobody else, it is kept by nobody (no heap scan for it).
        if isinstance(part, types_) and id(part) not in written and sys.getrefcount(part) > 4 + (id(part) in live):
            wanted.add(id(part))
    part = None
    if not wanted:
        return []
    # The owner's own objects (``state_dict(keep_vars=True)`` hands out the Parameters themselves): held
    # by the owner, live by design.
    owner = rec.owner() if owned else None
    if owner is not None:
        wanted -= _held_by_owner(owner, wanted, types_)
        if not wanted:
            return []
    return [(path, part) for path, part in probe.parts(rec.obj, "", 4, False) if path and id(part) in wanted]


_NOT_STATE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
              types.CodeType, types.FrameType)
_OWNER_WALK = 100_000  # objects looked at in one owner: past it, what was not found counts as not its own


def _held_by_owner(owner: Any, wanted: set[int], buffers: tuple[type, ...]) -> set[int]:
    """The ids of *wanted* that *owner* reaches through its own objects (a module's submodules' parameter
    dicts), never through code, classes or modules: one ``gc.get_referents`` call per level, bounded."""
    seen, level = {id(owner)}, [owner]
    found: set[int] = set()
    while level and len(seen) < _OWNER_WALK and len(found) < len(wanted):
        following = []
        for ref in gc.get_referents(*level):
            key = id(ref)
            if key in seen or type(ref) in _ATOMS or isinstance(ref, _NOT_STATE):
                continue
            seen.add(key)
            if key in wanted:
                found.add(key)
            elif not isinstance(ref, buffers):
                following.append(ref)
        level = following
    return found


def kept_in_pieces(records: dict[int, Record], rec: Record, fp: Fingerprint, node: Any = None,
                   node_id: int | None = None, buffers_only: bool = False) -> list[str]:
    """*Kept in pieces*: a consumer may keep a changed part of the snapshot rather than the snapshot
    itself: that part is kept. Returns the paths of the changed parts kept outside the snapshot.

    torchdata's ``_IncrementalState`` flattens the dataset's ``state_dict()`` and keeps its
    leaves, so a live list in it is compared with itself at the next snapshot and its growth
    never reaches the checkpoint. Only containers under the snapshot's dicts are looked at,
    each first by its reference count (O(1)); the diff and ``gc.get_referrers`` run only for a
    part something else refers to. *node*: the node whose parts these are, when not the record's owner
    (the node it was loaded into); *node_id*: its id, when it allows no weak reference.
    """
    owner = node if node is not None or node_id is not None else rec.owner()
    try:
        attrs = vars(owner) if owner is not None else {}
    except TypeError:
        attrs = {}
    if buffers_only:
        candidates, inside = buffer_pieces(rec), {id(rec.obj)}
    else:
        candidates, inside = keepers.referenced_parts(rec.obj, list(attrs.values()))
        candidates += buffer_pieces(rec)
    if not candidates:
        return []
    changed = [c.path for c in diff(rec.fp, fp) if c.path]
    wanted = [(path, part) for path, part in candidates if any(c.startswith(path) for c in changed)]
    if not wanted:
        return []
    # The owner keeps its own parts (as an object when its attributes live inline, not in a __dict__);
    # this look's own (path, part) pairs are no keepers either.
    ignore = {id(r) for r in records.values()} | inside | {id(attrs), id(owner), id(candidates)}
    if node_id is not None:
        ignore.add(node_id)
    ignore.update(map(id, candidates))
    ignore.update(map(id, wanted))
    ignore.update(map(id, rec.indexed))  # the ledger's own (key, part) pairs
    ignore.update(map(id, rec.live or ()))
    keepers.expect(part for _, part in wanted)
    # A buffer inside another record's value (a filtered dict a load was given) is held only if that
    # value is: looked through, as held() does.
    through: set[int] = set()
    if buffers_only:
        for other in records.values():
            if other is not rec:
                through.update(map(id, probe.reachable(other.obj)))
        through.difference_update(map(id, (part for _, part in wanted)))
    kept_parts = [(path, part) for path, part in wanted if keepers.held_by(part, ignore, through, 4)]
    if not kept_parts:
        return []
    # A part inside an earlier snapshot of the same owner (its last state_dict(), still recorded) is
    # held only if that snapshot is held, as in held(): looked at only to confirm.
    others: set[int] = set()
    for other in records.values():
        if other is not rec and other.owner_type is rec.owner_type and other.owner() is owner:
            others.update(map(id, probe.reachable(other.obj)))
    if not others:
        return [path for path, _ in kept_parts]
    return [path for path, part in kept_parts if keepers.held_by(part, ignore, others - {id(part)}, 4)]
