"""Shadows: inert stand-ins for a value's structure, decoded from a fingerprint.

A fingerprint keeps its detail as a pickle stream in which every object that is
not a builtin container or atom has been reduced (by ``__reduce_ex__``) and every
buffer (tensor, array) replaced by a digest token. Decoding that stream must not
run user code, import user modules or recreate live objects (a node's
``__setstate__`` could start threads), so :class:`ShadowUnpickler` resolves every
global to a :class:`Stub` type that merely records what would have been built.
"""

from __future__ import annotations

import io
import pickle
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any


class Stub:
    """What an object reduced to: its type's qualified name, args, state and items."""

    __slots__ = ("args", "state", "items", "dictitems", "__weakref__")
    # Declared without values: the slots are the storage, a class value would clash with them.
    args: tuple[Any, ...]
    state: Any
    items: list[Any]
    dictitems: list[tuple[Any, Any]]
    _qualname = "?"

    def __new__(cls, *args: Any, **kwargs: Any) -> Stub:
        self = object.__new__(cls)
        self.args = args + ((kwargs,) if kwargs else ())
        self.state = None
        self.items = []
        self.dictitems = []
        return self

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __call__(self, *args: Any, **kwargs: Any) -> Stub:
        """A stub called (a pickled bound method, ``getattr(obj, name)``, used as a reduction's
        callable): the call's stub, inert as every other."""
        return stub_type(f"{type(self)._qualname}()")(*args, **kwargs)

    def append(self, item: Any) -> None:
        self.items.append(item)

    def extend(self, items: Any) -> None:
        self.items.extend(items)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.dictitems.append((key, value))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_stub, (type(self)._qualname, self.args, self.state, self.items, self.dictitems))

    def __repr__(self) -> str:
        return f"<{type(self)._qualname}>"


class GlobalRef(type):
    """Metaclass of stub types; a stub type is also how a referenced global is shadowed."""

    if TYPE_CHECKING:
        # Each stub type's own class attribute, set by stub_type(). Declared for the checker
        # only: an annotation here would change what a stub type's __annotations__ resolves to.
        _qualname: str

    def __reduce__(cls) -> tuple[Any, ...]:  # type: ignore[override]
        return (stub_type, (cls._qualname,))

    def __repr__(cls) -> str:
        return cls._qualname


_STUB_TYPES: dict[str, type] = {}


def stub_type(qualname: str) -> type:
    """The (cached) stub type standing for the global named *qualname*."""
    cls = _STUB_TYPES.get(qualname)
    if cls is None:
        cls = GlobalRef(qualname.rpartition(".")[2] or "stub", (Stub,), {"__slots__": (), "_qualname": qualname})
        cls = _STUB_TYPES.setdefault(qualname, cls)
    return cls


def _rebuild_stub(qualname: str, args: tuple, state: Any, items: list, dictitems: list) -> Stub:
    stub = stub_type(qualname).__new__(stub_type(qualname), *args)
    stub.state, stub.items, stub.dictitems = state, items, dictitems
    return stub


SAMPLE_BYTES = 256


@dataclass(frozen=True, slots=True)
class BufferToken:
    """A tensor or array: identity-free facts plus a digest of its bytes."""

    kind: str  # qualified type name, e.g. "torch.Tensor", "numpy.ndarray"
    dtype: str
    shape: tuple[int, ...]
    device: str
    digest: bytes | None  # None when the bytes could not be read (meta/GPU)
    note: str = ""
    # The bytes themselves, for buffers of at most SAMPLE_BYTES: a change can then say which
    # elements changed and by how much. Not part of the token's identity (the digest is).
    sample: bytes | None = field(default=None, repr=False, compare=False)

    def describe(self) -> str:
        where = "" if self.device in ("", "cpu") else f", device {self.device}"
        return f"{self.kind.rpartition('.')[2]}(dtype {self.dtype}, shape {list(self.shape)}{where})"


@dataclass(frozen=True, slots=True)
class Opaque:
    """An object that could not be fingerprinted: compared as unknown, reported as unverifiable."""

    type_name: str
    reason: str


@dataclass(frozen=True, slots=True)
class Truncated:
    """Where a walk stopped because of the depth or size limit."""

    type_name: str
    reason: str


def new_instance(cls: Any) -> Any:
    """What a plain instance is reduced to (``aliascheck.fingerprint``): ``cls.__new__(cls)``, as pickle's
    NEWOBJ, but named by this function, so that pickling asks the instance nothing (NEWOBJ reads
    its ``__class__``). Decoded, *cls* is a stub type: an inert stub."""
    return cls.__new__(cls)


# The only callables a shadow stream may name besides stub types.
_SAFE = {
    ("aliascheck.shadow", name): obj
    for name, obj in {
        "stub_type": stub_type,
        "_rebuild_stub": _rebuild_stub,
        "new_instance": new_instance,
        "BufferToken": BufferToken,
        "Opaque": Opaque,
        "Truncated": Truncated,
    }.items()
}


class ShadowUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        safe = _SAFE.get((module, name))
        if safe is not None:
            return safe
        return stub_type(f"{module}.{name}")


def decode(detail: bytes) -> Any:
    """The shadow tree of a fingerprint's detail stream; runs no user code."""
    return ShadowUnpickler(io.BytesIO(detail)).load()


# id of a class -> (a weak reference to it, its name). Not a WeakKeyDictionary: its lookup is Python
# code that makes a reference per call, and every handover names its owner and its inner owners.
_names: dict[int, tuple[Any, str]] = {}


def qualname_of(obj: Any) -> str:
    """``module.Qualname`` of a class (remembered per class: every handover names its owners) or a function."""
    if isinstance(obj, type):
        known = _names.get(id(obj))
        if known is not None and known[0]() is obj:
            return known[1]
        name = _qualname(obj)
        try:
            _names[id(obj)] = (weakref.ref(obj, _forget(id(obj))), name)
        except TypeError:  # pragma: no cover - a type that cannot be weakly referenced
            pass
        return name
    return _qualname(obj)


def _forget(key: int) -> Any:
    def forget(ref: Any) -> None:
        known = _names.get(key)
        if known is not None and known[0] is ref:  # not a newer class at the same address
            del _names[key]

    return forget


def _qualname(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or "?"
    return f"{module}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"
