"""Structural fingerprints: a digest of a whole value plus the detail a diff needs.

The fast path is C pickle with a ``reducer_override`` that replaces each tensor
or array by a :class:`~aliascheck.shadow.BufferToken` (dtype, shape, xxh3 of its
bytes) and each opaque object by an :class:`~aliascheck.shadow.Opaque` marker.
Builtin containers and atoms never reach Python code, which is why this runs at
a fraction of ``copy.deepcopy``'s cost (see ../shared/PERF-NOTES.md). The pickle
memo stays on: it terminates cycles and records which paths share an object.

The stream itself is kept as the detail: it is compact (buffers are 16-byte
digests), holds no reference to the live value, and decodes to an inert shadow
tree (:mod:`aliascheck.shadow`) that :mod:`aliascheck.diff` compares.

When pickling fails (an object whose reduction raises, recursion too deep), the
pure-Python :mod:`aliascheck.walk` builds the same shadow tree object by object,
marking what it cannot read, so a fingerprint never raises.
"""

from __future__ import annotations

import base64
import io
import pickle
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import xxhash

import aliascheck.gate as gate
import aliascheck.guard as guard
import aliascheck.handlers as handlers
import aliascheck.mutability as mutability
import aliascheck.shadow as shadow

# Imported here, never inside a function: an import statement in a function calls builtins.__import__
# at each run, which a program may have replaced (dill's __diff memorises every module through it).
from .canonical import canonical_digest
from .diff import diff, iter_leaves
from .handlers import register_handler
from .walk import walk

__all__ = ["Fingerprint", "Limits", "fingerprint", "register_handler"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on one fingerprint: how deep the slow walk goes, how much detail is kept."""

    max_depth: int = 200
    max_items: int = 1_000_000
    max_detail_bytes: int = 64 * 1024 * 1024


DEFAULT_LIMITS = Limits()


class Fingerprint(NamedTuple):
    """What a value looked like: ``digest`` decides fast, ``detail`` explains.

    Two fingerprints with the same digest describe equal values. Different
    digests can still describe equal values (dict order, a set's hash order,
    which equal strings happened to be one object): ``==`` then compares the
    shadows, as ``==`` compares mappings. (A NamedTuple rather than a frozen
    dataclass: it is built on the hot path, and builds four times faster.)
    """

    digest: bytes
    detail: bytes | None
    opaque: int = 0  # how many parts could not be read
    truncated: bool = False
    exact: bool = True  # False when the slow walk had to be used

    def __repr__(self) -> str:
        return f"Fingerprint({self.digest.hex()[:16]}, {len(self.detail or b'')} bytes, opaque={self.opaque})"

    def shadow(self) -> Any:
        if self.detail is None:
            return shadow.Truncated("?", "detail not kept (over max_detail_bytes)")
        return shadow.decode(self.detail)

    @property
    def verifiable(self) -> bool:
        return self.opaque == 0 and not self.truncated

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Fingerprint):
            return NotImplemented
        if self.digest == other.digest:
            return True

        return not diff(self, other)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    # Unhashable: == holds between different digests too, so no hash can agree with it.
    # Hidden from mypy, which allows only fields in a NamedTuple body and would count
    # __hash__ as a sixth one (then every Fingerprint(...) call looks one argument short).
    if not TYPE_CHECKING:  # type: ignore[misc]  # the NamedTuple body rule above
        __hash__ = None

    def canonical_digest(self) -> str:
        """A hex digest independent of dict order, hash seed and object identity."""

        return canonical_digest(self.shadow())

    def to_json(self) -> dict[str, Any]:

        return {
            "digest": self.digest.hex(),
            "canonical": self.canonical_digest(),
            "detail": None if self.detail is None else base64.b64encode(self.detail).decode(),
            "opaque": self.opaque,
            "truncated": self.truncated,
            "exact": self.exact,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fingerprint:

        detail = data.get("detail")
        return cls(
            bytes.fromhex(data["digest"]),
            None if detail is None else base64.b64decode(detail),
            int(data.get("opaque", 0)),
            bool(data.get("truncated", False)),
            bool(data.get("exact", True)),
        )

    def unverifiable(self) -> list[tuple[str, str]]:
        """(path, type name) of every part that could not be read."""

        return [
            (path, _unverifiable_text(leaf))
            for path, leaf in iter_leaves(self.shadow())
            if isinstance(leaf, (shadow.Opaque, shadow.Truncated))
            or (isinstance(leaf, shadow.BufferToken) and leaf.digest is None)
        ] or ([("", "detail not kept")] if self.detail is None else [])


_handlers_cache: dict[type, Any] = handlers._cache  # type -> handler, filled by handlers.handler_for
_UNKNOWN: Any = object()
_Opaque, _BufferToken = shadow.Opaque, shadow.BufferToken
_HEAPTYPE = 1 << 9  # a class made by the program (a class statement), not one of the interpreter's or a C library's


class _Pickler(pickle.Pickler):
    """One per thread, reused: building a Pickler costs more than a tiny dump."""

    def __init__(self) -> None:
        self.buffer = io.BytesIO()
        self.opaque = 0
        self.seen: list[Any] | None = None  # the tensors/arrays met on the way, when asked for
        self.seen_types: tuple[type, ...] = ()
        self.then: dict[int, Any] | None = None  # id -> a reduction to use in place of the object's own
        self.reductions: list[Any] | None = None  # the reductions of what ``seen`` got, in its order
        self.by_identity = False  # an object that is not plain data is written as its identity alone
        if gate.COMPILED:
            # pickle looks its override up once, as it is made: the compiled one reads a plain CPU tensor
            # as handlers._tensor does (with the attributes above, read from this instance's dict) and
            # hands anything else to _reduce. Twin test: tests/test_fingerprint.py.
            # It knows this pickler weakly: a cycle would keep a dropped pickler (and its memo) alive.
            self.reducer_override = gate._compiled.reducer(  # type: ignore[method-assign]
                _handlers_cache, _Pickler._reduce, weakref.ref(self), handlers._tensor, handlers._KINDS,
                handlers._DTYPES, vars(handlers), _BufferToken, shadow.SAMPLE_BYTES)
        super().__init__(self.buffer, protocol=5)

    def _reduce(self, obj: Any) -> Any:
        # Called for every object the pickler has no builtin way for: the handler cache and the
        # unreadable test are read in place (two Python calls less an object).
        handler = _handlers_cache.get(type(obj), _UNKNOWN)
        if handler is _UNKNOWN:
            handler = handlers.handler_for(type(obj))
        if handler is None:
            if self.by_identity and type(obj).__flags__ & _HEAPTYPE and not mutability.plain_data(obj):
                # An object that owns its state (an AST node, a client, a tree's node) held inside plain
                # data: which object is held is the value, not what the object holds.
                return shadow._rebuild_stub, (shadow.qualname_of(type(obj)), (id(obj),), None, [], [])
            return handlers.plain_reduction(obj)
        if self.then is not None and (reduced := self.then.get(id(obj))) is not None:
            return reduced
        if self.seen is not None and isinstance(obj, self.seen_types):
            self.seen.append(obj)
            reduced = handler(obj)
            if self.reductions is not None:
                self.reductions.append(reduced)
        else:
            reduced = handler(obj)
        if reduced is not NotImplemented and (
                reduced[0] is _Opaque or (reduced[0] is _BufferToken and reduced[1][4] is None)):
            self.opaque += 1  # handlers.unreadable(reduced), inline
        return reduced

    reducer_override = _reduce  # without the compiled gate


_local = threading.local()
REUSE_MEMO = 256  # see encode()


def encode(obj: Any, seen: list[Any] | None = None, seen_types: tuple[type, ...] = (),
           then: dict[int, Any] | None = None, reductions: list[Any] | None = None,
           by_identity: bool = False) -> tuple[bytes, int]:
    """The detail stream of *obj* and its count of opaque parts (raises what pickling raises).

    *seen*: a list to append each object of *seen_types* met on the way to, each once.
    *then*: tensors' and arrays' reductions by id, read earlier: used in place of reading them now.
    *reductions*: a list to get the reduction of each object *seen* gets, in the same order.
    *by_identity*: an instance of a class of the program's that is not plain data
    (:func:`aliascheck.mutability.plain_data`) is written as which object it is, not what it holds.
    """
    # The thread's pickler is taken out while in use, so a reduction that asks
    # for a fingerprint of its own (re-entry) gets a fresh one.
    pickler = _local.__dict__.pop("pickler", None) or _Pickler()
    stream = None
    try:
        pickler.opaque = 0
        pickler.seen, pickler.seen_types, pickler.then, pickler.reductions = seen, seen_types, then, reductions
        pickler.by_identity = by_identity
        pickler.dump(obj)
        stream = pickler.buffer.getvalue()
        return stream, pickler.opaque
    finally:
        pickler.seen = pickler.then = pickler.reductions = None
        pickler.by_identity = False
        # clear_memo() zeroes the whole memo table, and the table never shrinks: after one
        # large value, every later tiny fingerprint on this thread would pay for it (640 us
        # instead of 3 after a 200k-object list). So a pickler that memoized more than
        # REUSE_MEMO objects (one MEMOIZE opcode each; a data byte can only overcount) is
        # dropped, and the next call builds one (~3 us, against a clear of ~1 us at the limit).
        # So is one whose dump failed part way.
        if stream is None:
            # Dropped: its memo still holds what it met (the value itself), and a failed dump may leave it
            # in a reference cycle (a frame of the traceback): emptied now, so that it keeps nothing alive.
            pickler.clear_memo()
        elif stream.count(pickle.MEMOIZE) <= REUSE_MEMO:
            pickler.clear_memo()
            pickler.buffer.seek(0)
            pickler.buffer.truncate()
            _local.pickler = pickler




def fingerprint(obj: Any, limits: Limits = DEFAULT_LIMITS, seen: list[Any] | None = None,
                seen_types: tuple[type, ...] = (), then: dict[int, Any] | None = None,
                reductions: list[Any] | None = None, by_identity: bool = False) -> Fingerprint:
    """Fingerprint *obj*. Never raises for the value's sake; unreadable parts are marked.

    *seen*: a list that gets every object of *seen_types* the fingerprint met (the
    tensors and arrays of a snapshot, found by the same C-speed pass, no second walk).
    *then*: the reductions of some tensors/arrays in it as read earlier (:func:`encode`): the
    value as it was then, when only those can have changed since. *reductions*: gets the reduction
    of each object *seen* gets (same order), for a later *then*. *by_identity*: see :func:`encode`.
    """
    exact = True
    guard.enter()  # the state methods pickling calls are part of this value, not handovers of their own
    try:
        stream, opaque = encode(obj, seen, seen_types, then, reductions, by_identity)
    except Exception:
        if seen is not None:
            seen.clear()  # the walk's shadows are not the objects: the caller walks itself
        if reductions is not None:
            reductions.clear()
        # RecursionError included: the walk has its own depth limit.

        exact = False
        tree, opaque, truncated = walk(obj, limits)
        stream, more = encode(tree)
        opaque += more
    else:
        truncated = False
    finally:
        guard.leave()
    digest = xxhash.xxh3_128_digest(stream)
    if len(stream) > limits.max_detail_bytes:
        return Fingerprint(digest, None, opaque, True, exact)
    return Fingerprint(digest, stream, opaque, truncated, exact)


def _unverifiable_text(leaf: Any) -> str:
    if isinstance(leaf, shadow.BufferToken):
        return f"{leaf.kind}: {leaf.note}"
    return f"{leaf.type_name}: {leaf.reason}"
