"""Load cloudpickle data without resetting the classes that already exist in this process.

cloudpickle 3.x rebuilds a pickled dynamic class (from ``__main__``, a notebook, a
function's locals, a module registered with ``register_pickle_by_value``) as a
skeleton, swaps in the live class with the same tracker id when there is one
(which keeps ``isinstance`` and identity), and then always calls
``_class_setstate`` on the result: the live class's attributes are overwritten
with their values at ``dumps`` time (cloudpipe/cloudpickle#439). numba patched only
its vendored copy (numba/numba PR #7388); Apache Beam met it again in 2025
(apache/beam#35062). Upstream keeps the behaviour for the interactive "redefine
and resend" workflow; a toggle has been discussed, none ships.

Here a class that this load built is populated as usual, and a class that was
already there is left as it is (``existing_classes="keep"``); ``"update"`` is
cloudpickle's own behaviour. Identity, ``isinstance`` and Enum members are
cloudpickle's: its own skeleton builders and tracker lookup do the work, only the
state setter is skipped for an existing class.

- ``loads(data)``, ``load(file)``, ``Unpickler``: one load, nothing patched.
- ``keep_existing_classes()`` (a context manager) and ``install()`` (returns the
  undo): for loads you do not call yourself, such as a Dask worker deserialising
  tasks in its threads. Both are process-wide while active.
"""

from __future__ import annotations

import contextlib
import functools
import io
import pickle
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import cloudpickle
from cloudpickle import cloudpickle as _cp

__all__ = ["EXISTING_CLASSES", "Unpickler", "install", "keep_existing_classes", "load", "loads"]

EXISTING_CLASSES = ("keep", "update")

_NEEDED = ("_make_skeleton_class", "_make_skeleton_enum", "_class_setstate", "_lookup_class_or_track")
_missing = [name for name in _NEEDED if not hasattr(_cp, name)]
if _missing:  # pragma: no cover - guards a cloudpickle outside the declared range
    raise ImportError(f"aliascheck.fixes.cloudpickle supports cloudpickle>=3.0,<4; cloudpickle "
                      f"{cloudpickle.__version__} lacks {', '.join(_missing)}")

# Pickles name these by module: 2.x streams say cloudpickle_fast, which 3.x forwards.
_MODULES = frozenset({"cloudpickle.cloudpickle", "cloudpickle.cloudpickle_fast"})
# The builders as cloudpickle ships them, taken before anyone can wrap them.
_real_skeleton_class = _cp._make_skeleton_class
_real_skeleton_enum = _cp._make_skeleton_enum

# Skeletons a load here built and nobody has populated yet (weak: a failed load drops them).
_unpopulated: weakref.WeakSet[type] = weakref.WeakSet()
_unpopulated_lock = threading.Lock()
# Existing classes this thread's load reconciled with; its state setter runs in the same thread.
_local = threading.local()


def _mode(existing_classes: str) -> str:
    if existing_classes not in EXISTING_CLASSES:
        raise ValueError(f"existing_classes must be one of {EXISTING_CLASSES}, not {existing_classes!r}")
    return existing_classes


def _reconciled() -> weakref.WeakSet[type]:
    marks = getattr(_local, "reconciled", None)
    if marks is None:
        marks = _local.reconciled = weakref.WeakSet()
    return marks


def _track(skeleton: Any, class_tracker_id: str | None) -> Any:
    """cloudpickle's own lookup, telling which of the two classes it returned."""
    cls = _cp._lookup_class_or_track(class_tracker_id, skeleton)
    if cls is skeleton:
        with _unpopulated_lock:
            _unpopulated.add(cls)
    else:
        _reconciled().add(cls)
    return cls


def _skeleton_class(type_constructor: Any, name: str, bases: tuple, type_kwargs: dict,
                    class_tracker_id: str | None, extra: Any) -> Any:
    # Built untracked (tracker id None), then reconciled, so the swap is visible.
    skeleton = _real_skeleton_class(type_constructor, name, bases, type_kwargs, None, extra)
    return _track(skeleton, class_tracker_id)


def _skeleton_enum(bases: tuple, name: str, qualname: str, members: dict, module: str,
                   class_tracker_id: str | None, extra: Any) -> Any:
    skeleton = _real_skeleton_enum(bases, name, qualname, members, module, None, extra)
    return _track(skeleton, class_tracker_id)


def _keeps(obj: Any) -> bool:
    """Whether setting state on *obj* would overwrite a class that already existed."""
    with _unpopulated_lock:
        if obj in _unpopulated:
            _unpopulated.discard(obj)
            return False
    marks = _reconciled()
    if obj in marks:
        marks.discard(obj)
        return True
    # Built by a load that did not go through here: populate it, as cloudpickle would.
    return False


def _setstate_one_load(obj: Any, state: Any) -> Any:
    if _keeps(obj):
        return obj
    return _cp._class_setstate(obj, state)  # whatever is installed now (a detector, a layer)


_ONE_LOAD = {
    "_make_skeleton_class": _skeleton_class,
    "_make_skeleton_enum": _skeleton_enum,
    "_class_setstate": _setstate_one_load,
}


class Unpickler(pickle.Unpickler):
    """A ``pickle.Unpickler`` that leaves existing classes alone (``existing_classes="keep"``)."""

    def __init__(self, file: Any, *, existing_classes: str = "keep", **kwargs: Any) -> None:
        super().__init__(file, **kwargs)
        self.existing_classes = _mode(existing_classes)

    def find_class(self, module: str, name: str) -> Any:
        if self.existing_classes == "keep" and module in _MODULES:
            replacement = _ONE_LOAD.get(name)
            if replacement is not None:
                return replacement
        return super().find_class(module, name)


def loads(data: Any, /, *, existing_classes: str = "keep", **kwargs: Any) -> Any:
    """``cloudpickle.loads``; with ``"keep"`` a class already in this process keeps its attributes.

    *kwargs* are ``pickle.loads``'s (``fix_imports``, ``encoding``, ``errors``, ``buffers``).
    """
    if _mode(existing_classes) == "update":
        return pickle.loads(data, **kwargs)
    return Unpickler(io.BytesIO(data), existing_classes=existing_classes, **kwargs).load()


def load(file: Any, /, *, existing_classes: str = "keep", **kwargs: Any) -> Any:
    """``cloudpickle.load`` with the same choice as :func:`loads`."""
    if _mode(existing_classes) == "update":
        return pickle.load(file, **kwargs)
    return Unpickler(file, existing_classes=existing_classes, **kwargs).load()


# -- process-wide -------------------------------------------------------------
# Layers on cloudpickle's module attributes, which is what pickle.loads finds by
# name. A layer delegates to what it replaced, so it composes with aliascheck's
# detector (which wraps _class_setstate too) in either order. When another wrapper
# sits on top at undo, the layer stays under it, inactive, and is reused next time.
_install_lock = threading.Lock()
_active = 0
_below: dict[str, Any] = {}
_in_chain: set[str] = set()


def _layer(name: str, keep: Callable[..., Any]) -> Any:
    @functools.wraps(getattr(_cp, name))  # same __module__/__qualname__: still pickled by reference
    def layer(*args: Any) -> Any:
        return keep(*args) if _active else _below[name](*args)

    return layer


def _setstate_layer(obj: Any, state: Any) -> Any:
    return obj if _keeps(obj) else _below["_class_setstate"](obj, state)


_LAYERS = {
    "_make_skeleton_class": _layer("_make_skeleton_class", _skeleton_class),
    "_make_skeleton_enum": _layer("_make_skeleton_enum", _skeleton_enum),
    "_class_setstate": _layer("_class_setstate", _setstate_layer),
}


def install() -> Callable[[], None]:
    """Keep existing classes in every cloudpickle load in this process until the undo is called."""
    global _active
    with _install_lock:
        if _active == 0:
            for name, layer in _LAYERS.items():
                if name not in _in_chain:
                    _below[name] = getattr(_cp, name)
                    setattr(_cp, name, layer)
                    _in_chain.add(name)
        _active += 1
    done = False

    def undo() -> None:
        global _active
        nonlocal done
        with _install_lock:
            if done:
                return
            done = True
            _active -= 1
            if _active:
                return
            for name, layer in _LAYERS.items():
                if getattr(_cp, name) is layer:
                    setattr(_cp, name, _below.pop(name))
                    _in_chain.discard(name)

    return undo


@contextlib.contextmanager
def keep_existing_classes() -> Iterator[None]:
    """While active, no cloudpickle load in this process (any thread) resets an existing class."""
    undo = install()
    try:
        yield
    finally:
        undo()
