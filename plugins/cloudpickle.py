"""cloudpickle adapter: a ``loads`` that overwrites a class already alive in this process.

cloudpickle 3.x rebuilds a pickled dynamic class as a skeleton, swaps in the live
class with the same tracker id (``_lookup_class_or_track``), then always runs
``_class_setstate`` on it, which writes every attribute back to its value at
``dumps`` time (cloudpipe/cloudpickle#439; numba PR #7388; apache/beam#35062).

Three module attributes are wrapped, which is what every load finds by name
(``cloudpickle.loads`` is ``pickle.loads``; Dask calls ``pickle.loads`` itself):

- ``_lookup_class_or_track``: tells a skeleton this load built (populating it is
  no reset) from a class that already existed;
- ``_class_setstate``: for an existing class, the live attributes immediately
  before and after it, limited to those the pickle writes and that differ from
  what was there. A class attribute other threads legitimately change between
  ``dumps`` and a later look is not judged (DESIGN-NOTES: compare around
  ``_class_setstate``, not across the test);
- ``_dynamic_class_reduce``: every dynamic class a Pickler hands over, counted,
  its site kept to name where the pickle was made.

And the Pickler's reducer of code objects: a function pickled by value
(``register_pickle_by_value``) carries its code as compiled without aliascheck's
marking (:func:`aliascheck.boundary.rewrite.plain_code`), since the interpreter that loads it
may run without aliascheck.

Findings go through the running ledger's one producer (``Ledger.report``), in
whichever thread loads.
"""

from __future__ import annotations

import functools
import os
import threading
import types
import weakref
from collections.abc import Callable
from typing import Any

from cloudpickle import cloudpickle as _cp

import aliascheck.ledger as _ledger
import aliascheck.sites as sites
from aliascheck.boundary.rewrite import RUNTIME, plain_code
from aliascheck.config import match
from aliascheck.diff import Change
from aliascheck.fresh import changed_names, class_state, pickled_state, state_changes
from aliascheck.hookspecs import hookimpl
from aliascheck.instrument import patch, patch_entry
from aliascheck.shadow import qualname_of

REQUIRES = "cloudpickle"
# Frames as sites.where() names them: short under site-packages, absolute elsewhere.
_CLOUDPICKLE_FRAMES = ("cloudpickle" + os.sep, os.path.dirname(os.path.abspath(_cp.__file__)) + os.sep)

_skeletons: weakref.WeakSet[type] = weakref.WeakSet()  # built by a load, not yet populated
_pickled_at: weakref.WeakKeyDictionary[type, tuple[str | None, str]] = weakref.WeakKeyDictionary()
_lock = threading.RLock()  # reentrant: see message_log._lock
# Installs nest (pytester runs pytest in pytest); the innermost session's allow-list applies.
_allowed: list[tuple[str, ...]] = []


@hookimpl
def aliascheck_install(options: Any) -> Callable[[], None]:
    allowed = tuple(options.allow_class_update)
    _allowed.append(allowed)
    undos = [
        _plain_code_pickled(),
        patch(_cp, "_walk_global_ops", _no_runtime_name),
        patch(_cp, "_lookup_class_or_track", _tracking),
        patch(_cp, "_class_setstate", _checked),
        patch(_cp, "_dynamic_class_reduce", _handed_over),
    ]

    def undo() -> None:
        for one in reversed(undos):
            one()
        _allowed.remove(allowed)

    return undo


def _plain_code_pickled() -> Callable[[], None]:
    """Code objects reduced as compiled without marking; the undo puts cloudpickle's reducer back."""
    table: dict[Any, Any] = getattr(_cp.Pickler, "_dispatch_table", {})

    def make(original: Any) -> Any:
        @functools.wraps(original)
        def _code_reduce(obj: Any) -> Any:
            return original(plain_code(obj))

        return _code_reduce

    return patch_entry(table, types.CodeType, make)


def _no_runtime_name(original: Any) -> Any:
    """The global names a code object reads, as compiled without marking: marked code reads the runtime
    through builtins under a name no program can write (``@aliascheck``), which the function's globals
    never hold."""

    @functools.wraps(original)
    def _walk_global_ops(code: Any) -> Any:  # looked up by _extract_code_globals at each call
        return (name for name in original(code) if name != RUNTIME)

    return _walk_global_ops


def _tracking(original: Any) -> Any:
    @functools.wraps(original)
    def _lookup_class_or_track(class_tracker_id: Any, class_def: Any) -> Any:
        found = original(class_tracker_id, class_def)
        if found is class_def and isinstance(found, type):
            with _lock:
                _skeletons.add(found)
        return found

    return _lookup_class_or_track


def _checked(original: Any) -> Any:
    # Same __module__/__qualname__ as cloudpickle's: pickles made meanwhile still name it.
    @functools.wraps(original)
    def _class_setstate(obj: Any, state: Any) -> Any:
        with _lock:
            fresh = obj in _skeletons
            _skeletons.discard(obj)
        led = _ledger.active()
        if fresh or led is None or not (isinstance(state, tuple) and isinstance(state[0], dict)) or _allow(obj):
            return original(obj, state)
        try:
            written = pickled_state(state[0])
            before = class_state(obj, written)
        except Exception as exc:  # pragma: no cover - aliascheck's own bug must not break the user's load
            _unchecked(led, obj, exc)
            return original(obj, state)
        result = original(obj, state)
        # Only what the pickle overwrote with another value, shown as it ended up: a
        # write by another thread to an attribute the pickle left equal is not loads'. An attribute
        # the live class lacked is added, not reset (copyreg's __slotnames__ cache, a method the
        # sender added to the class it sent).
        reset = [name for name in changed_names(before, written) if name in before]
        _report(led, obj, state_changes(before, class_state(obj, reset), reset) if reset else [])
        return result

    return _class_setstate


def _handed_over(original: Any) -> Any:
    @functools.wraps(original)
    def _dynamic_class_reduce(obj: Any) -> Any:
        led = _ledger.active()
        if led is not None:
            led.note_handover(qualname_of(obj))
            with _lock:
                _pickled_at[obj] = (led.test, _site()[0])
        return original(obj)

    return _dynamic_class_reduce


def _allow(cls: type) -> bool:
    name = qualname_of(cls)
    return bool(_allowed) and any(match(name, p) for p in _allowed[-1])


def _site() -> tuple[str, tuple[str, ...]]:
    """The innermost frame outside aliascheck and cloudpickle (dumps runs cloudpickle's frames)."""
    site, stack = sites.where(1)
    outside = [s for s in stack if not s.startswith(_CLOUDPICKLE_FRAMES)]
    if outside:
        site = outside[0].rpartition(" in ")[0]
    return site, stack


def _report(led: Any, cls: type, changes: list[Any]) -> None:
    led.note_checked()
    if not changes:
        return
    site, stack = _site()
    with _lock:
        pickled_in, pickled = _pickled_at.get(cls, (None, ""))
    led.report("class-reset", changes, owner=qualname_of(cls), check="loads", site=site, stack=stack,
               label=f"pickled at {pickled}" if pickled and pickled_in == led.test else "")


def _unchecked(led: Any, cls: type, exc: Exception) -> None:
    site, stack = _site()
    led.report("unverifiable", [Change("<class>", f"{type(exc).__name__}: {exc}", "not checked")],
               owner=qualname_of(cls), check="loads", site=site, stack=stack,
               hint="an aliascheck bug: please report it with this class")
