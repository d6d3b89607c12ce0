"""Zero-configuration discovery: every class that implements a state protocol is watched.

A class implements a state protocol when it has both halves of one of
:data:`PROTOCOLS` (its own or inherited); the methods it defines itself are
wrapped with the same handover and re-entry points every adapter uses
(:func:`aliascheck.instrument.instrument`), so a subclass that calls
``super().state_dict()`` is one handover, as nested calls always are.

Two ways in, both undone when the session stops:

- at the start, every class of every module already imported (a conftest's
  imports, the modules under test);
- afterwards, ``builtins.__build_class__``: every ``class`` statement, at module
  level, in a test module, or inside a test function, as it runs.

The scope decides which classes: ``project`` (the default: files under the
project's root directories, not installed packages), ``all`` (any file but
aliascheck's own), or ``off``. Library classes the adapters name (torch's
schedulers, torchdata's StatefulDataLoader) are watched whatever the scope.

Nothing here may break class creation: the class is made first, exactly as
without aliascheck, and a failure to look at it is swallowed.
"""

from __future__ import annotations

import builtins
import os
import sys
import threading
import types
import weakref
from collections.abc import Callable, Iterable
from typing import Any

import aliascheck.guard as guard
import aliascheck.sites as sites

from . import gate
from .boundary.rewrite import RUNTIME
from .instrument import instrument, patch, undo_all

# (handover methods, re-entry methods): a class with both halves of one pair is stateful.
PROTOCOLS: tuple[tuple[str, str], ...] = (
    ("state_dict", "load_state_dict"),  # torch, torch.distributed.checkpoint's Stateful, most libraries
    ("get_state", "reset"),  # torchdata.nodes
    ("get_extra_state", "set_extra_state"),  # nn.Module's extra state, a value inside state_dict()
    ("__getstate__", "__setstate__"),  # copy.copy, copy.deepcopy and pickle
)
SCOPES = ("project", "all", "off")
_PACKAGES = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")
# aliascheck itself, its fixed nodes included (they copy every snapshot by design).
_OURS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "")


# A class's own dict and MRO, read as type itself reads them: a metaclass's ``__dict__`` property or
# ``__getattr__`` is the program's code, never run by a look at a class (pure-eval's suite counts them).
CLASS_DICT = gate._CLASS_DICT


def _lookup(cls: type, name: str) -> Any:
    """What an instance of *cls* finds for *name* along the MRO (None: nothing), no metaclass code run."""
    found = gate._class_entry(cls, name)
    return None if found is gate._ABSENT else found


def methods(cls: type) -> tuple[list[str], list[str]]:
    """The handover and re-entry methods *cls* defines itself, of the protocols it implements."""
    own = CLASS_DICT(cls)
    state: list[str] = []
    load: list[str] = []
    if _lookup(cls, "_is_protocol"):  # typing.Protocol: a description, not an implementation
        return state, load
    for getter, setter in PROTOCOLS:
        if not (_function(_lookup(cls, getter)) and _function(_lookup(cls, setter))):
            continue
        if isinstance(own.get(getter), types.FunctionType):
            state.append(getter)
        if isinstance(own.get(setter), types.FunctionType):
            load.append(setter)
    return state, load


def _function(value: Any) -> bool:
    # A plain function (or a wrapper of one). A non-callable attribute named state_dict,
    # a staticmethod, a builtin slot: not a protocol method, left alone.
    return isinstance(value, types.FunctionType)


def watch(cls: type, calls: bool = False) -> Callable[[], None] | None:
    """Record the state methods *cls* defines; None when it implements no state protocol.

    *calls* (the project's classes): the marking of its other methods looks, after each, at a node
    that adopted part of a loaded state, so that what changed while it held the part is its own (a
    library's node is judged by what it holds at the check). A class imported before the marking
    (a conftest's import) has none: its other methods are left alone, not wrapped (a wrapper's frame
    would move every ``warnings.warn(stacklevel=...)`` and hold its arguments in tracebacks); what it
    adopted is judged at its next state call, a new load, its death and teardown.

    A method whose module was marked at import carries its recording in its own body
    (:func:`aliascheck.boundary.rewrite._record_in_body`): it is turned on, not wrapped, so the method keeps
    its frames and ``__code__``. A state method of any other class is wrapped.
    """
    state, load = methods(cls)
    if not state and not load:
        return None
    own = CLASS_DICT(cls)
    inside = {n for n in state if _inserted(own[n], "state_enter")} | {
        n for n in load if _inserted(own[n], "load_enter")}
    undo = instrument(cls, state=[n for n in state if n not in inside], load=[n for n in load if n not in inside])
    if not inside:
        return undo
    import aliascheck.boundary.runtime as boundary

    return undo_all([undo, boundary.activate([own[n].__code__ for n in inside])])


def _inserted(function: Any, call: str) -> bool:
    """Whether *function*'s body records itself through the runtime's *call* (a marked module's)."""
    names = function.__code__.co_names
    return RUNTIME in names and call in names


def watch_all(classes: Iterable[type]) -> Callable[[], None]:
    """:func:`watch` each class (a library's, named by an adapter); one undo for all."""
    return undo_all([undo for undo in map(watch, classes) if undo is not None])


def subclasses(cls: type) -> list[type]:
    """*cls* and every subclass defined so far."""
    out, stack = [], [cls]
    while stack:
        one = stack.pop()
        if one not in out:
            out.append(one)
            stack.extend(one.__subclasses__())
    return out


class Discovery:
    """One session's discovery: which files are in scope, which classes are watched."""

    def __init__(self, scope: str, roots: Iterable[str]) -> None:
        self.scope = scope
        self.roots = tuple(os.path.join(os.path.abspath(r), "") for r in roots)
        self.watched: weakref.WeakKeyDictionary[type, Callable[[], None]] = weakref.WeakKeyDictionary()
        self._files: dict[str, bool] = {}
        self._lock = threading.RLock()  # reentrant: a child's SIGTERM check may interrupt its holder
        self._undo: Callable[[], None] | None = None

    def start(self, marked: bool = False) -> None:
        """Watch from now on. *marked*: the project's modules are marked at import, and each tells
        of its classes itself (``made_class``), so ``__build_class__`` is left as it is: a hook there
        would stand between every class body and its caller (``sys._getframe(1)`` in a class body)."""
        if self.scope == "off" or self._undo is not None:
            return
        _active.append(self)
        if marked:
            import aliascheck.boundary.runtime as boundary

            hooks = boundary.CLASS_HOOKS
            hooks.append(self._made)
            self._undo = lambda: hooks.remove(self._made)
        else:
            self._undo = patch(builtins, "__build_class__", _hook)
        self.scan()

    def _made(self, cls: type) -> None:
        try:
            self.consider(cls)
        except Exception:  # pragma: no cover - looking at a class must never break making it
            pass

    def stop(self) -> None:
        if self._undo is None:
            return
        self._undo()
        self._undo = None
        _active.remove(self)
        for undo in list(self.watched.values()):
            undo()
        self.watched.clear()

    def scan(self) -> None:
        """Look at every class of every module imported so far whose file is in scope.

        Nothing met may warn or raise into the session: a deprecated module attribute warns
        on ``isinstance()``, a lazy one may raise. What fails to be looked at is passed over.
        """
        with guard.quiet():
            for module in list(sys.modules.values()):
                try:
                    file = getattr(module, "__file__", None)
                    if not isinstance(file, str) or not self.in_scope(file):
                        continue
                    values = list(vars(module).values())
                    name = getattr(module, "__name__", None)
                except Exception:
                    continue
                for value in values:
                    try:
                        if isinstance(value, type) and getattr(value, "__module__", None) == name:
                            self.consider(value, file)
                    except Exception:
                        continue

    def consider(self, cls: type, file: str | None = None) -> None:
        if cls in self.watched:
            return
        if file is None:
            file = getattr(sys.modules.get(cls.__module__), "__file__", None) or ""
        if not self.in_scope(file):
            return
        undo = watch(cls, calls=self.in_project(file))
        if undo is not None:
            with self._lock:
                self.watched[cls] = undo

    def in_project(self, file: str) -> bool:
        """Under the project's roots and not an installed package, whatever the scope."""
        path = os.path.abspath(file)
        return path.startswith(self.roots) and not any(p in path for p in _PACKAGES)

    def in_scope(self, file: str) -> bool:
        known = self._files.get(file)
        if known is None:
            path = os.path.abspath(file)
            if self.scope == "all":
                known = not path.startswith(("<", _OURS, os.path.dirname(os.__file__))) and not sites.is_ours(path)
            else:
                known = (path.startswith(self.roots) and not any(p in path for p in _PACKAGES)
                         and not path.startswith(_OURS) and not sites.is_ours(path))
            self._files[file] = known
        return known


_active: list[Discovery] = []  # nested sessions (pytester): the innermost one decides


def _hook(original: Any) -> Any:
    def __build_class__(func: Any, name: str, *bases: Any, **kwargs: Any) -> Any:
        cls = original(func, name, *bases, **kwargs)  # exactly as without aliascheck, errors included
        try:
            if _active and isinstance(cls, type):
                _active[-1].consider(cls, func.__code__.co_filename)
        except Exception:  # pragma: no cover - looking at a class must never break making it
            pass
        return cls

    return __build_class__
