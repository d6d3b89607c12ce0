"""What can change: the one table every part reads.

Two questions come up everywhere a value is handed over: can this value change at
all (a message of ints and strings cannot, so it is never fingerprinted twice), and
is it plain mutable data whose edits are a caller's (a cached list, a shared deque),
rather than a service object that owns its state? Both are answered here, by type,
for the probe, the slow fingerprint walk, the messages and the caches adapters alike.
"""

from __future__ import annotations

import array
import collections
import dataclasses
import types
import weakref
from typing import Any

# Immutable by type and holding nothing: never walked into, never fingerprinted twice.
ATOMS: frozenset[type] = frozenset({
    type(None), type(Ellipsis), type(NotImplemented), bool, int, float, complex, str, bytes, range,
})
# Code and namespaces: identities, not state (a function in a cached value is not data).
CODE: frozenset[type] = frozenset({
    type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.CodeType, types.ModuleType,
})
# Immutable themselves, mutable through what they hold.
FROZEN = (tuple, frozenset)
# Mutable containers, subclasses included (an OrderedDict, a defaultdict, a Counter).
CONTAINERS = (dict, list, set, bytearray, collections.deque, array.array)

_NOT_DATA = (type, types.ModuleType, types.FunctionType, types.MethodType, types.BuiltinFunctionType)


def immutable(value: Any, depth: int = 4, width: int = 64) -> bool:
    """Immutable all the way down, judged by type alone: atoms, and tuples/frozensets of them.

    Bounded: a long tuple of tuples, or a deep one, is not looked into (it counts as mutable,
    the safe answer); a tuple of atoms is answered at C speed whatever its length.
    """
    kind = type(value)
    if kind in ATOMS:
        return True
    if kind not in (tuple, frozenset) or not depth:
        return False
    kinds = set(map(type, value))  # C speed, however long
    if kinds <= ATOMS:
        return True
    return (len(value) <= width and kinds <= ATOMS | {tuple, frozenset}
            and all(immutable(v, depth - 1, width) for v in value))


def is_buffer(value: Any) -> bool:
    """A numpy array or torch tensor, without importing either."""
    return buffer_type(type(value))


class Seed:
    """A heap type, the first key of aliascheck's per-type caches: a dict of atoms and builtin types
    is not tracked by gc until a class is put in it, and a program counting ``gc.get_objects()``
    would see the table appear in the middle of its test. Seeded, it is tracked from the start."""


_buffer_types: dict[type, bool] = {Seed: False}


def buffer_type(kind: type) -> bool:
    """Whether *kind* is numpy's or torch's array/tensor type (answered once per type)."""
    known = _buffer_types.get(kind)
    if known is None:
        module = kind.__module__ or ""
        known = _buffer_types[kind] = module.startswith(("numpy", "torch")) and hasattr(kind, "shape") and hasattr(
            kind, "dtype")
    return known


def has_attributes(value: Any) -> bool:
    """An instance whose state is its attributes (``__dict__`` or ``__slots__``), not code or a class."""
    if issubclass(type(value), _NOT_DATA):
        return False
    return type(value).__dictoffset__ != 0 or bool(slot_names(type(value)))  # by type: no attribute read


def is_mutable(value: Any) -> bool:
    """Whether *value* itself can change in place: a container, a buffer, an object with attributes."""
    if issubclass(type(value), CONTAINERS) or is_buffer(value):
        return True
    return has_attributes(value) and not callable(value)


def plain_data(value: Any) -> bool:
    """Mutable plain data whose edits are a caller's, not an object's own workings.

    Containers (subclasses too), tuples holding something mutable, arrays and tensors,
    ``SimpleNamespace`` and dataclass instances. An instance of another class is a
    service that owns its state (a cached client may change; that is its job).
    """
    kind = type(value)
    if issubclass(type(value), CONTAINERS) or kind is types.SimpleNamespace or is_buffer(value):
        return True
    if kind is tuple:
        return not immutable(value)
    return dataclasses.is_dataclass(kind) and not issubclass(type(value), type)


# Per class, weakly: a strong cache would keep every class seen alive, and with it its module's
# globals (a script's loaders, their worker queues and feeder threads).
_slots: weakref.WeakKeyDictionary[type, tuple[str, ...]] = weakref.WeakKeyDictionary([(Seed, ())])


def slot_names(cls: type) -> tuple[str, ...]:
    """The ``__slots__`` attributes of *cls* and its bases (not ``__dict__``/``__weakref__``); cached."""
    found = _slots.get(cls)
    if found is None:
        names: list[str] = []
        for klass in getattr(cls, "__mro__", ()):
            slots = klass.__dict__.get("__slots__", ())
            for name in (slots,) if issubclass(type(slots), str) else slots:
                if name not in ("__dict__", "__weakref__") and name not in names:
                    names.append(name)
        found = tuple(names)
        try:
            _slots[cls] = found
        except TypeError:  # a type that cannot be weakly referenced: not cached
            pass
    return found


def attributes(value: Any) -> list[tuple[str, Any]]:
    """(name, value) of an instance's attributes: its ``__dict__`` and its set slots."""
    out: list[tuple[str, Any]] = []
    try:  # the instance's own dict, read past any __getattribute__ or __dict__ property of its class
        space = object.__getattribute__(value, "__dict__")
        if type(space) is dict:
            out += list(space.items())
    except (AttributeError, TypeError):
        pass
    for name in slot_names(type(value)):
        try:
            out.append((name, object.__getattribute__(value, name)))
        except AttributeError:  # an unset slot
            continue
    return out

