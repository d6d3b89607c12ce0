"""Who holds a snapshot: the owner, the ledger, a caller's local, or a real keeper.

A snapshot is judged only while something other than its owner keeps it (or keeps a
changed part of it). The reference count gives a cheap first look; ``gc.get_referrers``
and this thread's callers' locals confirm, only before something would be reported.
*records* is the ledger's table: its own references are never keepers.
"""

from __future__ import annotations

import contextlib
import gc
import types
from typing import Any

import aliascheck.probe as probe
import aliascheck.sites as sites

from .fingerprint import Fingerprint
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
        with contextlib.suppress(TypeError):
            attrs = vars(owner)
            ignore.add(id(attrs))
            ignore.update(id(v) for v in attrs.values() if isinstance(v, (dict, list, tuple)))
    inside = {id(part) for r in records.values() if r is not rec for part in probe.reachable(r.obj)}
    return held_by(rec.obj, ignore, inside, 6)


def part_kept(records: dict[int, Record], rec: Record, fp: Fingerprint) -> bool:
    """Whether a changed part of *rec*'s snapshot is kept outside it, though the snapshot is not.

    A consumer that keeps the pieces rather than the whole: torchdata's
    ``_IncrementalState`` flattens the dataset's ``state_dict()`` and keeps its leaves,
    so a live list in it is compared with itself at the next snapshot and its growth
    never reaches the checkpoint. Looked at only once a change is known.
    """
    from .diff import diff

    changed = [c.path for c in diff(rec.fp, fp) if c.path]
    if not changed:
        return False
    found = list(probe.parts(rec.obj, "", 8, False))
    ignore = {id(r) for r in records.values()} | {id(part) for _, part in found}
    owner = rec.owner()
    if owner is not None:
        with contextlib.suppress(TypeError):
            ignore.add(id(vars(owner)))
    for path, part in sorted(found, key=lambda e: -len(e[0])):
        if path and isinstance(part, (dict, list, set, bytearray)) and any(c.startswith(path) for c in changed):
            if held_by(part, ignore, set(), 4):
                return True
    return False


def held_by(obj: Any, ignore: set[int], inside: set[int], depth: int) -> bool:
    """Whether something outside the ledger and the owner holds *obj*.

    A container that is part of another record's snapshot (a loaded checkpoint's
    sub-dict inside the outer one) holds *obj* only if it is itself held: a caller
    that dropped the whole checkpoint leaves the node that adopted a part of it as
    the only holder, which is no finding.
    """
    if sites.held_by_callers(obj):
        return True
    for ref in gc.get_referrers(obj):
        if id(ref) in ignore or isinstance(ref, types.FrameType):
            continue
        if id(ref) not in inside:
            return True
        if depth and held_by(ref, ignore | {id(obj)}, inside, depth - 1):
            return True
    return False
