"""Snapshot isolation: a copy of a state that shares nothing mutable with the live original.

``isolate(state)`` is what a keeper of ``state_dict()`` results should store instead of the
result itself (torchdata stores the snapshot uncopied, see meta-pytorch/data PR #1547, which
proposes ``copy.deepcopy``).  It has deepcopy's semantics (shared references and cycles are
preserved, immutable values are passed through) at a fraction of its cost:

* atomic values (``int``, ``str``, ``None``, ``torch.dtype``, numpy scalars, ...) are returned as is;
* ``dict``/``list``/``set`` whose items are all atomic are copied at C speed, ``tuple``/``frozenset``
  whose items are all atomic are returned as is, and mixed ones are walked;
* a plain ``torch.Tensor`` is cloned (``clone()`` is 5-10x cheaper than the tensor's
  ``__deepcopy__``), a plain non-object ``numpy.ndarray`` is ``copy()``-ed;
* anything else goes to ``copy.deepcopy`` with the same memo, so identity is kept across both paths.

torch and numpy are never imported here: their types are recognised only once the user's
program has imported them (``sys.modules``), as Hypothesis does for numpy.

An object that even ``copy.deepcopy`` cannot copy (a lock, a generator, an open file) cannot be
isolated.  ``isolate`` then raises :class:`IsolationError` naming the path; with
``on_uncopyable="share"`` it instead keeps that one object shared, isolates everything around
it, and issues an :class:`IsolationWarning`.  The fixed nodes use ``"share"`` so that a state
upstream torchdata can checkpoint never breaks a pipeline (they are never worse than upstream).
"""

from __future__ import annotations

import copy
import enum
import sys
import warnings
import weakref
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from typing import Any, Literal

import aliascheck.mutability as mutability

__all__ = ["IsolationError", "IsolationWarning", "isolate"]

_Memo = dict  # id(original) -> copy, shared with copy.deepcopy
_Copier = Callable[[Any, _Memo], Any]
_MISSING = object()

# Immutable all the way down (copy.deepcopy's own atomic list). A frozenset so that readers in
# other threads always see a complete set: additions replace it, they never mutate it.
_ATOMIC: frozenset[type] = mutability.ATOMS | mutability.CODE | {weakref.ref, property}


class IsolationError(TypeError):
    """A value in a state cannot be copied, so the state cannot be isolated from its owner."""

    def __init__(self, obj: Any, path: str, cause: BaseException) -> None:
        self.obj, self.path, self.cause = obj, path, cause
        super().__init__(
            f"cannot isolate {type(obj).__qualname__} at {path}: {type(cause).__name__}: {cause}; "
            "return a copyable value from get_state() (or implement __deepcopy__)"
        )


class IsolationWarning(UserWarning):
    """A value could not be copied and stays shared with the live state."""


class _Uncopyable(Exception):
    """Raised inside the walk; collects the path as the stack unwinds (no cost until raised)."""

    def __init__(self, obj: Any, cause: BaseException) -> None:
        self.obj, self.cause = obj, cause
        self.path: list[str] = []

    def error(self) -> IsolationError:
        return IsolationError(self.obj, "state" + "".join(reversed(self.path)), self.cause)


def isolate(obj: Any, *, on_uncopyable: Literal["raise", "share"] = "raise") -> Any:
    """Return a copy of ``obj`` that no later change to ``obj`` can reach, nor the reverse.

    Raises :class:`IsolationError` if some value in ``obj`` cannot be copied, unless
    ``on_uncopyable="share"``: then that value stays shared and an :class:`IsolationWarning`
    says where.
    """
    try:
        return _copy(obj, {})
    except _Uncopyable as exc:
        failure = exc
    if on_uncopyable != "share":  # anything else, typos included, is the safe "raise"
        raise failure.error() from failure.cause
    return _isolate_sharing(obj, failure)


def _isolate_sharing(obj: Any, failure: _Uncopyable) -> Any:
    shared: _Memo = {}
    while True:
        warnings.warn(f"{failure.error()}; it stays shared with the live state", IsolationWarning, stacklevel=3)
        # Seeded as its own copy, an uncopyable object is passed through by our walk and by
        # deepcopy alike, keeping its identity; everything around it is still copied.
        shared[id(failure.obj)] = failure.obj
        try:
            return _copy(obj, dict(shared))
        except _Uncopyable as exc:
            failure = exc


def _copy(x: Any, memo: _Memo) -> Any:
    cls = type(x)
    if cls in _ATOMIC:
        return x
    y = memo.get(id(x), _MISSING)
    if y is not _MISSING:
        return y
    return (_COPIERS.get(cls) or _classify(cls))(x, memo)


def _copy_dict(x: dict, memo: _Memo) -> dict:
    # Copy at C speed, then replace the few values that are not atomic. Registered in the memo
    # before the walk, so a cycle back to `x` finds the copy.
    atomic = _ATOMIC
    y = memo[id(x)] = x.copy()
    rekey = False
    try:
        for k, v in x.items():
            if type(v) not in atomic:
                y[k] = _copy(v, memo)
            if type(k) not in atomic:
                rekey = True
    except _Uncopyable as exc:
        exc.path.append(f"[{k!r}]")
        raise
    if rekey:
        _rekey(y, memo)
    return y


def _rekey(y: dict, memo: _Memo) -> None:
    # Keys are hashable, hence nearly always immutable (tuples come back as themselves), but
    # deepcopy copies them, so we do too; the dict is refilled in place to keep its identity.
    items = list(y.items())
    y.clear()
    for k, v in items:
        y[_copy(k, memo)] = v


def _copy_ordered_dict(x: OrderedDict, memo: _Memo) -> OrderedDict:
    y: OrderedDict = _copy_dict(x, memo)  # type: ignore[assignment]  # x.copy() keeps the type
    if x.__dict__:  # nn.Module.state_dict() keeps `_metadata` here, and load_state_dict reads it
        y.__dict__.update(_copy(x.__dict__, memo))
    return y


def _copy_list(x: list, memo: _Memo) -> list:
    atomic = _ATOMIC
    y = memo[id(x)] = x.copy()
    # map(type, ...) and issuperset run in C: ~15 ns an item, where deepcopy pays ~450.
    if len(x) > 16 and atomic.issuperset(map(type, x)):
        return y
    try:
        for i, v in enumerate(x):  # noqa: B007 - `i` names the failing item
            if type(v) not in atomic:
                y[i] = _copy(v, memo)
    except _Uncopyable as exc:
        exc.path.append(f"[{i}]")
        raise
    return y


def _copy_tuple(x: tuple, memo: _Memo) -> tuple:
    atomic = _ATOMIC
    if atomic.issuperset(map(type, x)):
        return x  # immutable all the way down: deepcopy returns it too
    items = list(x)
    try:
        for i, v in enumerate(x):  # noqa: B007
            if type(v) not in atomic:
                items[i] = _copy(v, memo)
    except _Uncopyable as exc:
        exc.path.append(f"[{i}]")
        raise
    y = memo.get(id(x), _MISSING)
    if y is not _MISSING:  # a cycle through a mutable item has copied us already
        return y
    y = memo[id(x)] = x if all(a is b for a, b in zip(items, x, strict=True)) else tuple(items)
    return y


def _copy_set(x: set, memo: _Memo) -> set:
    if _ATOMIC.issuperset(map(type, x)):
        y = memo[id(x)] = x.copy()
        return y
    return _deepcopy(x, memo)


def _copy_frozenset(x: frozenset, memo: _Memo) -> frozenset:
    return x if _ATOMIC.issuperset(map(type, x)) else _deepcopy(x, memo)


def _copy_bytearray(x: bytearray, memo: _Memo) -> bytearray:
    y = memo[id(x)] = bytearray(x)
    return y


def _copy_tensor(x: Any, memo: _Memo) -> Any:
    # clone() is ~10x cheaper than Tensor.__deepcopy__; deepcopy is kept for what clone would
    # lose: autograd (requires_grad, .grad) and Python attributes set on the tensor.
    if x.requires_grad or x.__dict__:
        return _deepcopy(x, memo)
    y = memo[id(x)] = x.clone()
    return y


def _copy_ndarray(x: Any, memo: _Memo) -> Any:
    if x.dtype.hasobject:  # object arrays hold references that need a deep copy
        return _deepcopy(x, memo)
    y = memo[id(x)] = x.copy(order="K")
    return y


def _pass(x: Any, memo: _Memo) -> Any:
    return x


def _deepcopy(x: Any, memo: _Memo) -> Any:
    try:
        return copy.deepcopy(x, memo)
    except Exception as exc:
        raise _Uncopyable(x, exc) from exc


_COPIERS: dict[type, _Copier] = {
    dict: _copy_dict,
    defaultdict: _copy_dict,  # x.copy() keeps default_factory, as deepcopy does
    OrderedDict: _copy_ordered_dict,
    list: _copy_list,
    tuple: _copy_tuple,
    set: _copy_set,
    frozenset: _copy_frozenset,
    bytearray: _copy_bytearray,
}


def _classify(cls: type) -> _Copier:
    """Find the copier for a type not seen before; cache it when the answer is a fast one."""
    global _ATOMIC
    copier = _framework_copier(cls)
    if copier is _pass or (copier is None and issubclass(cls, enum.Enum)):
        _ATOMIC = _ATOMIC | {cls}  # replaced, not mutated: see _ATOMIC
        return _pass
    if copier is None:
        return _deepcopy  # not cached: unknown classes may be created dynamically, without bound
    _COPIERS[cls] = copier
    return copier


def _framework_copier(cls: type) -> _Copier | None:
    torch = sys.modules.get("torch")
    if torch is not None:
        if cls is torch.Tensor:
            return _copy_tensor
        if cls in (torch.dtype, torch.device, torch.Size, torch.layout, torch.memory_format):
            return _pass
    np = sys.modules.get("numpy")
    if np is not None:
        if cls is np.ndarray:
            return _copy_ndarray
        # numpy scalars are immutable, except structured np.void ones which may be views.
        if (issubclass(cls, np.generic) and not issubclass(cls, np.void)) or issubclass(cls, np.dtype):
            return _pass
    return None
