"""Bounded walks over live objects: where a snapshot shares mutable parts with its owner.

Sharing is not a finding by itself (``nn.Module.state_dict()`` shares live
tensors by design); a shared part that later changes is. The probe names the
risk at handover, with both paths, so a later mutation finding can say *why*.
"""

from __future__ import annotations

import bisect
import gc
import operator
import sys
import types
import weakref
from collections import Counter, deque
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from itertools import compress, repeat
from typing import Any

import aliascheck.mutability as mutability

_CONTAINERS = (dict, list, tuple, set, frozenset)
SKIP_MODULES = ("threading", "queue", "_thread", "multiprocessing", "torch.multiprocessing", "concurrent")


_trusted: list[Any] = []


def trust(owner: str | type) -> Any:
    """Skip the alias probe for owners from a module prefix, or of a type; returns the undo.

    A framework's own objects keep or share state by design: torchdata's mapper
    returns its stored ``_snapshot``, ``nn.Module.state_dict()`` returns live
    parameters (documented). Probing them would warn on every correct program;
    a *change* of what they handed over is still a finding.
    """
    _trusted.append(owner)
    return lambda: _trusted.remove(owner)


def trusted(owner_type: type) -> bool:
    module = owner_type.__module__ or ""
    for t in _trusted:
        if issubclass(type(t), str):
            if module == t or module.startswith(t + "."):
                return True
        elif issubclass(owner_type, t):
            return True
    return False


_NOT_PLAIN = (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType)

# What is an object worth following, a buffer, mutable: one table (aliascheck.mutability).
is_plain_object = mutability.has_attributes
is_buffer = mutability.is_buffer
is_mutable = mutability.is_mutable


def parts(obj: Any, path: str, depth: int, walk_objects: bool) -> Iterator[tuple[str, Any]]:
    """(path, part) for every part of *obj* down to *depth* levels, each object once."""
    seen: set[int] = set()
    stack = [(path, obj, 0)]
    while stack:
        where, node, level = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield where, node
        if level >= depth:
            continue
        for child_path, child in _children(node, where, walk_objects):
            stack.append((child_path, child, level + 1))


# Leaves that can hold nothing: never walked into, never yielded as parts.
_ATOMIC = mutability.ATOMS
_DESCEND = (dict, list, tuple, deque)


def _all_atomic(values: Any) -> bool:
    """Whether every value is an atomic leaf; ``map``/``set`` run at C speed (10 ms for 1M ints)."""
    return set(map(type, values)) <= _ATOMIC


def _children(node: Any, where: str, walk_objects: bool) -> list[tuple[str, Any]]:
    if issubclass(type(node), dict):
        if _all_atomic(node.values()):
            return []
        return [(f"{where}[{k!r}]", v) for k, v in list(node.items()) if type(v) not in _ATOMIC]
    if issubclass(type(node), (list, tuple, deque)):
        if _all_atomic(node):
            return []
        return [(f"{where}[{i}]", v) for i, v in enumerate(list(node)) if type(v) not in _ATOMIC]
    if walk_objects and is_plain_object(node):
        module = type(node).__module__ or ""
        if module.startswith(SKIP_MODULES):
            return []
        return [(f"{where}.{k}", v) for k, v in mutability.attributes(node)
                if type(v) not in _ATOMIC and (not callable(v) or issubclass(type(v), _CONTAINERS))]
    return []


def reachable(obj: Any, depth: int = 6) -> list[Any]:
    """*obj* and every container (dict, list, tuple) and buffer reachable from it through
    containers, down to *depth* levels; no paths (an object reached twice may be listed twice).

    What the hot paths need (which parts of a loaded state were handed over before,
    which buffers a snapshot holds): one ``gc.get_referents`` call per level, split by
    type with C iterators, so a 1M-int list or a 300k-key dict costs milliseconds.
    """
    out = [obj]
    level = [obj] if issubclass(type(obj), _DESCEND) else []
    buffers = buffer_types()
    for _ in range(depth):
        if not level:
            break
        containers, others = _split(gc.get_referents(*level))
        level = containers
        out += containers
        for ref in others:
            if issubclass(type(ref), _DESCEND):  # a dict or list subclass
                level.append(ref)
                out.append(ref)
            elif buffers and issubclass(type(ref), buffers):
                out.append(ref)
    return out


_PLAIN = frozenset({dict, list, tuple})
_KNOWN = _ATOMIC | _PLAIN


def _split(refs: list[Any]) -> tuple[list[Any], list[Any]]:
    """(plain dicts, lists and tuples; everything else but atomic leaves) among *refs*, with C iterators."""
    if not refs:
        return [], []
    kinds = list(map(type, refs))
    present = set(kinds)
    if present <= _ATOMIC:  # a list of a million ints: nothing to follow
        return [], []
    containers = list(compress(refs, map(_PLAIN.__contains__, kinds))) if present & _PLAIN else []
    others = list(compress(refs, map(operator.not_, map(_KNOWN.__contains__, kinds)))) \
        if not present <= _KNOWN else []
    return containers, others


def _attribute_dict(obj: Any) -> Any:
    try:
        return object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        return None


def buffer_types() -> tuple[type, ...]:
    found = []
    torch, np = sys.modules.get("torch"), sys.modules.get("numpy")
    if torch is not None:
        found.append(torch.Tensor)
    if np is not None:
        found.append(np.ndarray)
    return tuple(found)


def aliases(snapshot: Any, owner: Any, owner_name: str, depth: int = 3, limit: int = 32) -> list[tuple[str, str]]:
    """(snapshot path, owner path) of each mutable object the snapshot shares with the owner.

    Only the outermost shared objects are named (``['a']`` covers ``['a']['b']``), at
    most *limit* of them. Tensors and arrays are shared when they view the same memory,
    whatever the object: ``t.detach()``, ``t[:]``, ``torch.from_numpy(a)`` and the new
    Parameter ``load_state_dict(assign=True)`` wraps around the caller's tensor.

    Cost: the owner's and the snapshot's objects are gathered level by level with
    ``gc.get_referents`` (atomic leaves dropped at C speed) and compared as id sets;
    paths are made only for what is shared.
    """
    if is_mutable(snapshot):  # the live attribute itself (``return self.state``): named with no walk
        try:
            attrs = list(vars(owner).items())
        except TypeError:
            attrs = []
        for name, value in attrs:
            if value is snapshot:
                return [("", f"{owner_name}.{name}")]
    live, buffers = _gather(owner, depth, objects=True)
    live.discard(id(owner))
    memory = _Memory()
    for buffer in buffers:
        memory.add(buffer, id(buffer))
    shared: dict[int, int] = {}  # id in the snapshot -> id of the live object it is (or views)
    level = [snapshot]
    seen = {id(snapshot)}
    for _ in range(depth + 1):
        following = []
        for node in level:
            if not is_mutable(node):
                continue
            if id(node) in live:
                shared[id(node)] = id(node)
            elif is_buffer(node) and (found := memory.find(node)) is not None:
                shared[id(node)] = found
            elif issubclass(type(node), _DESCEND):
                following.append(node)
            if len(shared) >= limit:
                break
        if len(shared) >= limit or not following:
            break
        level = []
        for ref in gc.get_referents(*following):
            if type(ref) not in _ATOMIC and id(ref) not in seen:
                seen.add(id(ref))
                level.append(ref)
    if not shared:
        return []
    snap_paths = paths_to(snapshot, "", set(shared), depth + 1, objects=False)
    live_paths = paths_to(owner, owner_name, set(shared.values()), depth, objects=True)
    found = [(snap_paths[i], live_paths[j]) for i, j in shared.items() if i in snap_paths and j in live_paths]
    return _outermost(found)


def _gather(root: Any, depth: int, objects: bool) -> tuple[set[int], list[Any]]:
    """Ids of the mutable objects reachable from *root* (through attributes too, with *objects*), and its buffers."""
    ids = {id(root)}
    buffers: list[Any] = []
    level = [root]
    for _ in range(depth):
        containers = [n for n in level if issubclass(type(n), _DESCEND)] if len(level) < 64 else \
            list(compress(level, map(_PLAIN.__contains__, map(type, level))))
        refs = gc.get_referents(*containers) if containers else []
        if objects:
            for node in level:
                if type(node) not in _PLAIN and not issubclass(type(node), _DESCEND) and is_plain_object(node):
                    refs.extend(v for _, v in _children(node, "", True))
                    ids.add(id(_attribute_dict(node)))  # get_state() returning self.__dict__
        plain, others = _split(refs)
        ids.update(map(id, plain))
        level = plain
        for ref in others:
            if issubclass(type(ref), _NOT_PLAIN) or id(ref) in ids:
                continue
            ids.add(id(ref))
            if is_buffer(ref):
                buffers.append(ref)
            elif issubclass(type(ref), _DESCEND) or (objects and is_plain_object(ref)):
                level.append(ref)
        if not level:
            break
    return ids, buffers


def paths_to(root: Any, name: str, targets: set[int], depth: int, objects: bool) -> dict[int, str]:
    """The path from *root* to each object of *targets*, breadth first, stopping once all are found."""
    paths: dict[int, str] = {}
    if id(root) in targets:
        paths[id(root)] = name
    seen = {id(root)}
    level = [(name, root)]
    for _ in range(depth):
        if len(paths) == len(targets) or not level:
            break
        following = []
        for where, node in level:
            if objects and id(_attribute_dict(node)) in targets:
                paths[id(_attribute_dict(node))] = f"{where}.__dict__"
            for child_path, child in _children(node, where, objects):
                if id(child) in seen:
                    continue
                seen.add(id(child))
                if id(child) in targets:
                    paths[id(child)] = child_path
                    if not objects:  # in a snapshot, what is inside a shared object is covered by it
                        continue
                following.append((child_path, child))
        level = following
    return paths


def extent(buffer: Any) -> tuple[str, int, int] | None:
    """(device, first byte, end byte) of the memory a tensor or array views; None if it has none."""
    try:
        if hasattr(buffer, "data_ptr"):  # torch.Tensor
            size = buffer.nbytes
            if not size or buffer.is_meta:
                return None
            start = buffer.data_ptr()
            index = buffer.get_device()  # -1 on the CPU; cheaper than str(buffer.device)
            device = "cpu" if index < 0 else f"{buffer.device.type}:{index}"
            if buffer.is_contiguous():
                return device, start, start + size
            span = sum((n - 1) * st for n, st in zip(buffer.shape, buffer.stride(), strict=True)) + 1
            return device, start, start + span * buffer.element_size()
        if buffer.size == 0:
            return None
        start = buffer.__array_interface__["data"][0]
        low = high = 0  # offsets of the lowest and highest element, as numpy's byte_bounds computes them
        for n, st in zip(buffer.shape, buffer.strides, strict=True):
            low, high = (low + (n - 1) * st, high) if st < 0 else (low, high + (n - 1) * st)
        return "cpu", start + low, start + high + buffer.itemsize
    except Exception:  # a tensor subclass or wrapper without plain storage: not compared by memory
        return None


def memory_key(buffer: Any) -> tuple[str, int, int] | None:
    """What identifies a buffer's memory: (device, first byte, end byte), or None."""
    return extent(buffer)


class _Memory:
    """Byte ranges of live buffers, to find the one a snapshot's buffer overlaps."""

    def __init__(self) -> None:
        self.ranges: dict[str, list[tuple[int, int, Any]]] = {}

    def add(self, buffer: Any, where: Any) -> None:
        found = extent(buffer)
        if found is not None:
            device, start, end = found
            bisect.insort(self.ranges.setdefault(device, []), (start, end, where))

    def find(self, buffer: Any) -> Any:
        found = extent(buffer)
        if found is None or found[0] not in self.ranges:
            return None
        device, start, end = found
        ranges = self.ranges[device]
        i = bisect.bisect_left(ranges, (end,))  # ranges starting before this one ends
        for live_start, live_end, where in reversed(ranges[max(0, i - 8):i]):
            if live_start < end and start < live_end:
                return where
        return None


def _outermost(found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Drop aliases nested under one already reported: ['a'] covers ['a']['b']."""
    found.sort(key=lambda pair: len(pair[0]))
    kept: list[tuple[str, str]] = []
    for path, owner_path in found:
        if not any(path.startswith(k) for k, _ in kept):
            kept.append((path, owner_path))
    return kept


def references_from(owner: Any, obj: Any) -> int:
    """How many references *owner* holds to *obj* directly or one container deep."""
    count = 0
    try:
        values = list(vars(owner).values())
    except TypeError:
        return 0
    for value in values:
        if value is obj:
            count += 1
        elif issubclass(type(value), dict):  # identity counted at C speed: an attribute may be a 300k-key table
            count += sum(map(operator.is_, value.values(), repeat(obj)))
        elif issubclass(type(value), (list, tuple)):
            count += sum(map(operator.is_, value, repeat(obj)))
    return count


def held_ids(owner: Any) -> set[int]:
    """Ids of what *owner* holds directly or one container deep (its attributes, their items), at C speed."""
    ids: set[int] = set()
    for value in [v for _, v in mutability.attributes(owner)]:
        ids.add(id(value))
        if issubclass(type(value), dict):
            ids.update(map(id, value.values()))
        elif issubclass(type(value), (list, tuple)):
            ids.update(map(id, value))
    try:
        ids.add(id(vars(owner)))  # ``self.__dict__ = state``: the attributes are the state itself
    except TypeError:
        pass
    return ids


def refcount(obj: Any) -> int:
    """References to *obj* held by the caller and everyone else (not by this call itself)."""
    return sys.getrefcount(obj) - 2  # less getrefcount's argument and this function's parameter


_FROZEN = frozenset({tuple, frozenset})
# Parts looked at per level before a state is taken the usual way: the look costs ~40 ns a part, more
# than a fingerprint of a long list of ints (~20 ns an item) that it would save at one handover.
FRESH_WIDTH = 2048
# The same for a value the project keeps (:mod:`aliascheck.boundary.runtime`): recording it costs at least two
# fingerprints (kept, then judged), and a test's ``list(loader)`` of 15k dataset items holding new
# tensors ~10 us an item each time, against ~2 us an item to look.
KEPT_WIDTH = 1 << 17
_FRESH = frozenset({dict, list, set}) | _FROZEN
_FRESH_KNOWN = _ATOMIC | _FRESH


def fresh(obj: Any, passed: AbstractSet[int] = frozenset(), shared: list[Any] | None = None,
          width: int = FRESH_WIDTH, instances: bool = False) -> bool:
    """Whether *obj* (a dict or list its caller alone refers to) holds nothing anyone else refers to.

    Plain containers, atoms and buffers that own their memory, each mutable part referred to by
    its parent alone: then no part of it can be live state, so no change of it can ever be a
    finding. Tuples and frozensets are immutable, so whoever else refers to them changes nothing;
    what they hold is looked at. A tensor (exactly ``torch.Tensor``) or an array (exactly
    ``numpy.ndarray``, not of objects) counts when it is no view and nobody else uses its memory
    (a new generator state, a ``clone()``). With *instances*, an instance of a plain class
    (:func:`_plain_class`) is looked into as a dict is (a snapshot object a state method made:
    ``Snap(self.pos, list(self.seen))``); any other object is not fresh. Level by level with
    ``gc.get_referents``, types tested at C speed; a level wider than *width* is not
    looked into (the answer is no: the usual path then). *passed*: ids of parts the caller holds
    one more reference to (the inner states a nested ``state_dict()`` returned). *shared*: a list
    to put each tensor or array that someone else refers to into, instead of answering no (fresh
    but for those buffers).
    """
    if type(obj) not in (dict, list):
        return False
    level: list[Any] = [obj]
    descend: frozenset[type] = _FRESH
    owed: Counter[type] | None = None
    while level:
        if sum(map(len, level) if descend is _FRESH else map(_width, level)) > width:
            return False
        refs = gc.get_referents(*level)
        if owed is not None:  # the plain instances of the level above refer to their classes: not their values
            kept = _without_classes(refs, owed)
            if kept is None:
                return False
            refs = kept
        kinds = set(map(type, refs))
        if kinds <= _ATOMIC:
            return True
        descend, owed = _FRESH, None
        if not kinds <= _FRESH_KNOWN:
            buffers = kinds - _FRESH_KNOWN
            plain = set(filter(_plain_class, buffers)) if instances else None
            if plain:  # looked into as a dict is: its attributes are the next level
                buffers -= plain
                descend = _FRESH | frozenset(plain)
                owed = Counter(type(part) for part in refs if type(part) in plain)
            if not buffers <= _owned_buffer_types():
                return False
            # Only the buffers are looked at one by one (a level may hold thousands of atoms). Each is
            # referred to by its parent, *refs*, the filter's list, the loop variable and
            # getrefcount's argument alone.
            for part in [part for part in refs if type(part) in buffers]:
                if sys.getrefcount(part) != 5 or not _owns_memory(part):
                    if shared is None:
                        return False
                    shared.append(part)
        level = list(compress(refs, map(descend.__contains__, map(type, refs))))
        # Referred to by its parent, *refs*, *level*, the loop variable and getrefcount's argument alone.
        for part in level:
            if type(part) not in _FROZEN and sys.getrefcount(part) != 5 and not (
                    passed and sys.getrefcount(part) == 6 and id(part) in passed):
                return False
        del refs
    return True


def _width(part: Any) -> int:
    return len(part) if type(part) in _FRESH else 1


_HEAP_TYPE = 1 << 9
_POINTER = tuple.__itemsize__
# Whether a type is a plain class (:func:`_plain_class`), by type, weakly: a dynamic class dies when the
# program drops it.
_plain: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def _plain_class(kind: type) -> bool:
    """A class written in Python on ``object`` alone: its instances hold nothing but their attributes and
    slots, all of which ``gc.get_referents`` shows (no C-level state, as a lock's or a C type's subclass
    has). Told by the layout: every class in the MRO but ``object`` is a heap type, and the instance is
    ``object``'s size plus its slots and its weak-reference slot, nothing more."""
    known = _plain.get(kind)
    if known is None:
        known = False
        mro = kind.__mro__
        if not issubclass(kind, type) and mro[-1] is object and not kind.__itemsize__ and all(
                c.__flags__ & _HEAP_TYPE for c in mro[:-1]):
            slots = 0
            for c in mro[:-1]:
                own = vars(c).get("__slots__", ())
                own = (own,) if isinstance(own, str) else own
                slots += sum(1 for name in own if name not in ("__dict__", "__weakref__"))
            size = object.__basicsize__ + _POINTER * (slots + (kind.__weakrefoffset__ > 0))
            known = kind.__basicsize__ == size and kind.__dictoffset__ <= 0
        _plain[kind] = known
    return known


def _without_classes(refs: list[Any], owed: Counter[type]) -> list[Any] | None:
    """*refs* less the one reference each plain instance of the level above holds to its class; None when
    a class is among them more often (a class object is a value too: not fresh)."""
    metas = {type(kind) for kind in owed}
    classes = Counter(part for part in refs if type(part) in metas)
    if classes != owed:
        return None
    return [part for part in refs if type(part) not in metas]


_owned: frozenset[type] = frozenset()


def _owned_buffer_types() -> frozenset[type]:
    """``torch.Tensor`` and ``numpy.ndarray``, those of them imported (looked up until both are)."""
    global _owned
    if len(_owned) < 2:
        _owned = frozenset(getattr(sys.modules.get(name), kind) for name, kind in
                           (("torch", "Tensor"), ("numpy", "ndarray")) if name in sys.modules)
    return _owned


def _owns_memory(buffer: Any) -> bool:
    """A tensor or array that is no view, whose memory nobody else uses (no other tensor, array or
    capsule), holding no object references."""
    try:
        if type(buffer).__module__ == "numpy":
            return buffer.base is None and buffer.flags.owndata and not buffer.dtype.hasobject
        if buffer._base is not None or buffer.is_sparse:
            return False
        # The storage's users: this tensor and the storage object made here to ask. Memory torch did not
        # allocate here (not resizable: an array's, or shared memory a torch.multiprocessing queue
        # mapped in) or that it shares with other processes is not this tensor's alone: another
        # process, or the array's owner, writes it.
        storage = buffer.untyped_storage()
        return (sys.modules["torch"]._C._storage_Use_Count(storage._cdata) <= 2 and storage.resizable()
                and not storage.is_shared())
    except Exception:  # a private API gone, a wrapper without storage: not known to be fresh
        return False
