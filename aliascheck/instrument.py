"""Handover and check points, installed as method wrappers on a framework's classes.

One mechanism for every adapter: ``instrument(cls, ...)`` wraps the methods that
hand state out (``state_dict``), take it back (``reset``, ``load_state_dict``),
start iteration (``__iter__``) and build instances (``__init__``). Patches nest
(pytester runs pytest inside pytest): each install is counted and the last
uninstall restores the original. Wrappers do nothing but one global read when
no ledger is recording.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import FunctionType, ModuleType
from typing import Any

import aliascheck.guard as guard
import aliascheck.judge as judge
import aliascheck.ledger as _ledger

from .shadow import qualname_of

_tls = threading.local()
_patches: dict[tuple[Any, str], list[Any]] = {}  # (cls, name) -> [count, original]
_lock = threading.RLock()  # reentrant: a child's SIGTERM check may interrupt its holder (processes)


def patch(cls: type | ModuleType, name: str, make: Callable[[Any], Any]) -> Callable[[], None]:
    """Replace ``cls.name`` (a class's or a module's) by ``make(original)``; returns the undo. Re-entrant."""
    with _lock:
        entry = _patches.get((cls, name))
        if entry is None:
            original = cls.__dict__[name]
            wrapper = make(original)
            wrapper.__aliascheck_original__ = original
            setattr(cls, name, wrapper)
            _patches[(cls, name)] = [1, original]
        else:
            entry[0] += 1
    done = False

    def undo() -> None:
        nonlocal done
        if done:
            return
        done = True
        with _lock:
            entry = _patches[(cls, name)]
            entry[0] -= 1
            if entry[0] == 0:
                setattr(cls, name, entry[1])
                del _patches[(cls, name)]

    return undo


def patch_entry(table: dict[Any, Any], key: Any, make: Callable[[Any], Any]) -> Callable[[], None]:
    """Replace ``table[key]`` (a pickler's dispatch table) by ``make(original)``; returns the undo,
    which puts the original back only while the entry is still the wrapper. Nothing when absent."""
    original = table.get(key)
    if original is None:
        return lambda: None
    wrapper = make(original)
    table[key] = wrapper

    def undo() -> None:
        if table.get(key) is wrapper:
            table[key] = original

    return undo


def undo_all(undos: Sequence[Callable[[], None]]) -> Callable[[], None]:
    """One undo for several, run last first so that patches unwind in reverse order."""

    def undo() -> None:
        for one in reversed(undos):
            one()

    return undo


def project_namespaces(in_scope: Callable[[str], bool]) -> Iterator[tuple[ModuleType, list[tuple[str, Any]]]]:
    """Each module already imported from the project (*in_scope* of its file), with its names and values.

    What adapters that patch a function rebind: a name a module took before the
    install (``from functools import lru_cache``) still holds the original.
    """
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or not in_scope(file):
            continue
        try:
            items = list(vars(module).items())
        except TypeError:  # pragma: no cover - a module object without a namespace
            continue
        yield module, items


def rebind(owner: Any, name: str, old: Any, new: Any) -> Callable[[], None]:
    """Set ``owner.name`` (a module's or a class's) to *new*; the undo puts *old* back if *new* is still there."""
    try:
        setattr(owner, name, new)
    except (AttributeError, TypeError):  # pragma: no cover - a read-only namespace
        return lambda: None

    def undo() -> None:
        if vars(owner).get(name) is new:
            setattr(owner, name, old)

    return undo


def instrument(
    cls: type,
    state: Iterable[str] = ("state_dict",),
    load: Iterable[str] = ("load_state_dict",),
    iterate: Iterable[str] = (),
    init: bool = False,
    kind: str | None = None,
    calls: Iterable[str] = (),
) -> Callable[[], None]:
    """Wrap *cls*'s state methods; returns one undo for all of them.

    *calls*: its other methods, after which a node that adopted a loaded state is looked at
    (did it let go of what it adopted? see :meth:`Ledger.after_call`).
    """
    own = type.__dict__["__dict__"].__get__(cls)  # as type reads it: no metaclass property runs
    undos = []
    for name in calls:
        if name in own:
            undos.append(patch(cls, name, _call))
    for name in state:
        if name in own:
            undos.append(patch(cls, name, functools.partial(_handover, kind=kind or name)))
    for name in load:
        if name in own:
            undos.append(patch(cls, name, functools.partial(_reentry, kind=kind or name)))
    for name in iterate:
        if name in own:
            undos.append(patch(cls, name, _root))
    if init and "__init__" in own:
        undos.append(patch(cls, "__init__", _created))
    return undo_all(undos)


# -- the recording of a state method's call: one mechanism, two ways in ------------------
# A library class's method is wrapped (the wrappers below). A project class's method is not: the
# import-time rewrite (:mod:`aliascheck.boundary.rewrite`) inserts the same enter/exit calls into its own
# body, so its frames, ``__code__``, recursion depth and tracebacks stay as written.

MISSING: Any = object()  # a load called without a state argument: nothing to record


def state_enter() -> Any:
    """A state method starts; returns the token :func:`state_exit` takes (None: record nothing)."""
    led = _ledger.current
    if led is None or not led.recording or guard.busy():
        return None
    depth = getattr(_tls, "depth", 0)
    _tls.depth = depth + 1
    if not depth:
        _tls.nested = []
    return (led, depth)


def state_exit(token: Any, owner: Any, result: Any, raised: bool, kind: str, refs: int = 3,
               handles: bool = False) -> None:
    """The state method *token* came from returned *result* (or *raised*). *refs*: the references the
    callers hold to *result*, this parameter and the handover's included (a fresh state is told by them).
    *handles*: the caller asked for live objects (torch's ``keep_vars=True``): recorded (a keep of it is
    told by the boundary), never judged as a snapshot."""
    if token is None:
        return
    led, depth = token
    _tls.depth = depth
    if raised:
        if not depth:
            _tls.nested = None
        return
    if depth:
        # Nested in an outer call: one handover, but remember who made which part.
        nested = getattr(_tls, "nested", None)
        if nested is not None:
            nested.append((result, owner))
        return
    nested, _tls.nested = _tls.nested, None
    led.note_root(owner)
    led.handover(result, owner, kind, nested, local_refs=refs, handles=handles)


def load_enter(node: Any, state: Any, kind: str, code: Any = None) -> Any:
    """A load (``reset``, ``load_state_dict``) starts with *state* (:data:`MISSING` when the call passed
    none); returns the token :func:`load_exit` takes (None: record nothing). *code*: the code of the
    method being entered (the original's, for a wrapper)."""
    led = _ledger.current
    depth = getattr(_tls, "depth", 0)
    if led is None or not led.recording or depth or guard.busy():
        return None
    led.note_root(node)
    if state is MISSING or state is None:
        before = None
    else:
        try:
            before = led.loaded(state, node, kind, after=True)
        except Exception as exc:  # aliascheck's own failure never reaches the program's load
            judge.internal(led, qualname_of(type(node)), exc, check="load", what="load")
            before = None
    _tls.depth, _tls.nested = 1, None
    return Loading(led, state, before, code is not None and _most_derived(node, code))


def _most_derived(node: Any, code: Any) -> bool:
    """Whether *code* is the method the node's class resolves its name to (unwrapped): the load the
    program called, not an override's ``super().reset(state)``, whose caller may keep the state after
    it returns. Read from the classes' dicts, as ``type`` reads them: no descriptor runs."""
    name = code.co_name
    for cls in type(node).__mro__:
        own = _CLASS_DICT(cls)
        if name in own:
            method = own[name]
            if type(method) is not FunctionType:  # a descriptor of the program's: nothing of it is read
                return False
            method = method.__dict__.get("__wrapped__", method)  # a wrapper's original, read from its dict
            return type(method) is FunctionType and method.__code__ is code
    return False


_CLASS_DICT = type.__dict__["__dict__"].__get__


class Loading:
    """A load in progress (the token :func:`load_enter` gives): aliascheck's bookkeeping, never a
    holder of the state it carries (:func:`aliascheck.keepers.held_by` passes over it). *outermost*:
    the node's own load method, nothing of the class's runs after it (:func:`_most_derived`)."""

    __slots__ = ("led", "state", "before", "outermost")

    def __init__(self, led: Any, state: Any, before: Any, outermost: bool) -> None:
        self.led, self.state, self.before, self.outermost = led, state, before, outermost


def load_exit(token: Any, node: Any, raised: bool, passing: frozenset[int] = frozenset()) -> None:
    """*passing*: ids of the wrapper's own tuple and dict of the call's arguments, no holders."""
    if token is None:
        return
    _tls.depth = 0
    led, state, before = token.led, token.state, token.before
    token.state = None
    if before is not None and not raised:  # the load returned: did it write into what it was given?
        # Held by the call's arguments (the wrapper's tuple or the method's parameter), this name and
        # after_load's parameter.
        try:
            led.after_load(state, node, before, local_refs=3, passing=passing, outermost=token.outermost)
        except Exception as exc:  # aliascheck's own failure never reaches the program's load
            judge.internal(led, qualname_of(type(node)), exc, check="load", what="load")
    elif before is not None:
        led.load_raised(state)


def _state_parameter(original: Any) -> tuple[int, str | None]:
    """Where a load method takes its state: (position after self, name), (-1, None) when it takes none."""
    try:
        params = list(inspect.signature(original).parameters.values())[1:]
    except (TypeError, ValueError):
        return 0, None  # no signature: the first argument, by position only
    if not params:
        return -1, None
    first = params[0]
    position = 0 if first.kind in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD, first.VAR_POSITIONAL) else -1
    name = first.name if first.kind in (first.POSITIONAL_OR_KEYWORD, first.KEYWORD_ONLY) else None
    return position, name


def state_argument(args: tuple[Any, ...], kwargs: dict[str, Any], where: tuple[int, str | None]) -> Any:
    """The state a load call passed, as the method's signature binds it; :data:`MISSING` when none."""
    position, name = where
    if position >= 0 and len(args) > position:
        return args[position]
    if name is not None and name in kwargs:
        return kwargs[name]
    return MISSING


def _handover(original: Any, kind: str) -> Any:
    @functools.wraps(original)
    def state_dict(self: Any, *args: Any, **kwargs: Any) -> Any:
        token = state_enter()
        try:
            result = original(self, *args, **kwargs)
        except BaseException:
            del args, kwargs  # the traceback holds this frame: no reference cycle through the call's arguments
            if token is not None:
                state_exit(token, self, None, True, kind)
            raise
        if token is not None:
            # ``state_dict(keep_vars=True)``: torch hands out the Parameters themselves, on request: handles,
            # not a snapshot.
            state_exit(token, self, result, False, kind, handles=kwargs.get("keep_vars") is True or (
                len(args) > 2 and args[2] is True))
        return result

    return state_dict


def _reentry(original: Any, kind: str) -> Any:
    where = _state_parameter(original)
    code = getattr(original, "__code__", None)

    @functools.wraps(original)
    def load(self: Any, *args: Any, **kwargs: Any) -> Any:
        # The call is passed on exactly as made: no argument added, none moved.
        token = load_enter(self, state_argument(args, kwargs, where), kind, code)
        try:
            result = original(self, *args, **kwargs)
        except BaseException:
            # The traceback holds this frame: its locals must not hold the call's arguments (an exception
            # passed as one, ``cause=e``, would make a cycle the program avoided: omegaconf deletes its own).
            del args, kwargs
            if token is not None:
                load_exit(token, self, True)
            raise
        if token is not None:
            load_exit(token, self, False, frozenset((id(args), id(kwargs))))
        return result

    return load


def after_call(node: Any) -> None:
    """A method of *node* returned: a node that adopted a loaded state is looked at."""
    led = _ledger.current
    if led is not None and led.adopters and id(node) in led.adopters and not guard.busy():
        led.after_call(node)


def _call(original: Any) -> Any:
    @functools.wraps(original)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        after_call(self)
        return result

    return method


def _root(original: Any) -> Any:
    @functools.wraps(original)
    def __iter__(self: Any) -> Any:
        led = _ledger.current
        if led is not None and led.recording:
            led.note_root(self)
        return original(self)

    return __iter__


def _created(original: Any) -> Any:
    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        led = _ledger.current
        if led is not None and led.owning:
            led.note_created(self)

    return __init__


def checkpoint(original: Any, check: str) -> Any:
    """Wrap a method whose result is a delivered snapshot (verified against its record)."""

    @functools.wraps(original)
    def delivered(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        led = _ledger.current
        if led is not None and led.recording and result is not None:
            led.verify(result, check)
        return result

    return delivered
